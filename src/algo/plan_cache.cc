#include "algo/plan_cache.h"

#include <utility>

namespace strata {

Plan* PlanCache::findFurther(const PlanKey& key) {
  for (size_t i = 1; i < entries_.size(); ++i) {
    if (!(entries_[i].key == key)) continue;
    std::swap(entries_[i], entries_[0]);  // cheap move-to-front
    return entries_[0].plan.get();
  }
  return nullptr;
}

Plan* PlanCache::insert(const PlanKey& key, Plan plan) {
  if (entries_.size() >= capacity_) entries_.pop_back();
  entries_.insert(entries_.begin(), Entry{key, std::make_unique<Plan>(std::move(plan))});
  return entries_[0].plan.get();
}

}  // namespace strata
