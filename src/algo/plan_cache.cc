#include "algo/plan_cache.h"

#include <utility>

namespace strata {

size_t planBytes(const Plan& p) {
  return sizeof(Plan) + p.ops.capacity() * sizeof(OpDesc) + p.flows.capacity() * sizeof(Flow) +
         p.phases.capacity() * sizeof(Phase) + p.algorithm.capacity() + p.peers.capacity() * sizeof(int) +
         (p.bytesTo.capacity() + p.bytesFrom.capacity()) * sizeof(uint64_t);
}

void PlanCache::setFront() {
  front_ = order_.front().plan.get();
  frontKey_ = order_.front().key;
}

Plan* PlanCache::findFurther(const PlanKey& key) {
  auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  order_.splice(order_.begin(), order_, it->second);  // iterators stay valid
  setFront();
  return front_;
}

Plan* PlanCache::insert(const PlanKey& key, Plan plan) {
  if (auto old = index_.find(key); old != index_.end()) {  // replaced (not done by runCollective)
    bytes_ -= old->second->bytes;
    ++evictions_;
    order_.erase(old->second);
    index_.erase(old);
  }
  const size_t bytes = planBytes(plan);
  order_.push_front(Entry{key, std::make_unique<Plan>(std::move(plan)), bytes});
  index_.emplace(key, order_.begin());
  bytes_ += bytes;
  while (order_.size() > 1 && (order_.size() > maxPlans_ || bytes_ > maxBytes_)) {
    bytes_ -= order_.back().bytes;
    ++evictions_;
    index_.erase(order_.back().key);
    order_.pop_back();
  }
  setFront();
  return front_;
}

}  // namespace strata
