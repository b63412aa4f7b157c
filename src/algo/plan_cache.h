// Recently used plans of one communicator, keyed by everything that shapes a
// plan (collective, count, dtype, op, root, placement). Training loops repeat
// the same calls, so the steady state builds no plans and allocates nothing.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "algo/plan.h"

namespace strata {

struct PlanKey {
  Coll coll;
  size_t count;
  strataDataType_t dtype;
  strataRedOp_t redop;
  int root;
  bool inPlace;
  bool operator==(const PlanKey& o) const {
    return coll == o.coll && count == o.count && dtype == o.dtype && redop == o.redop &&
           root == o.root && inPlace == o.inPlace;
  }
};

class PlanCache {
 public:
  explicit PlanCache(size_t capacity = 32) : capacity_(capacity) {}
  // The cached plan for `key`, moved to the front; nullptr if absent. A
  // repeated call finds its plan in front, checked here without a call.
  Plan* find(const PlanKey& key) {
    if (!entries_.empty() && entries_[0].key == key) return entries_[0].plan.get();
    return findFurther(key);
  }
  Plan* insert(const PlanKey& key, Plan plan);

 private:
  Plan* findFurther(const PlanKey& key);
  struct Entry {
    PlanKey key;
    std::unique_ptr<Plan> plan;
  };
  size_t capacity_;
  std::vector<Entry> entries_;  // most recently used first
};

}  // namespace strata
