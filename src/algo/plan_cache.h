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

// Two words, each made in a register and stored whole: a lookup right after
// the key is made then reads what one store wrote (separate narrow fields,
// compared by one wide load, would stall store-to-load forwarding on every call).
struct PlanKey {
  PlanKey(Coll coll, size_t count, strataDataType_t dtype, strataRedOp_t redop, int root, bool inPlace)
      : count(count),
        shape(uint64_t(uint8_t(coll)) | uint64_t(uint8_t(dtype)) << 8 | uint64_t(uint8_t(redop)) << 16 |
              uint64_t(inPlace) << 24 | uint64_t(uint32_t(root)) << 32) {}
  uint64_t count;
  uint64_t shape;  // collective, dtype, operator, in place, root
  bool operator==(const PlanKey& o) const { return count == o.count && shape == o.shape; }
};

class PlanCache {
 public:
  explicit PlanCache(size_t capacity = 32) : capacity_(capacity) {}
  // The cached plan for `key`, moved to the front; nullptr if absent.
  Plan* find(const PlanKey& key);
  Plan* insert(const PlanKey& key, Plan plan);

 private:
  struct Entry {
    PlanKey key;
    std::unique_ptr<Plan> plan;
  };
  size_t capacity_;
  std::vector<Entry> entries_;  // most recently used first
};

}  // namespace strata
