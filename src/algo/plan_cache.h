// Recently used plans of one communicator, keyed by everything that shapes a
// plan (collective, count, dtype, op, root, placement). Training loops repeat
// the same calls, so the steady state builds no plans and allocates nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "algo/plan.h"

namespace strata {

// Kept as two whole words, built in registers: comparing a key assembled
// field by field on the stack (narrow stores) with wide loads stalls store
// forwarding on every repeated call (measured: most of runCollective's time
// for an 8-byte all-reduce).
class PlanKey {
 public:
  PlanKey(Coll coll, size_t count, strataDataType_t dtype, strataRedOp_t redop, int root, bool inPlace)
      : count_(count),
        shape_(uint64_t(uint8_t(coll)) | uint64_t(uint8_t(dtype)) << 8 | uint64_t(uint8_t(redop)) << 16 |
               uint64_t(inPlace) << 24 | uint64_t(uint32_t(root)) << 32) {}
  bool operator==(const PlanKey& o) const { return count_ == o.count_ && shape_ == o.shape_; }

 private:
  uint64_t count_;
  uint64_t shape_;  // coll, dtype, op, in-place: a byte each; root: the high half
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
