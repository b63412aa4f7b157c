// Recently used plans of one communicator, keyed by everything that shapes a
// plan (collective, count, dtype, op, root, placement). Training loops repeat
// the same calls, so the steady state builds no plans and allocates nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <unordered_map>
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
  size_t hash() const { return size_t((count_ * 0x9E3779B97F4A7C15ull) ^ (shape_ + (shape_ >> 29))); }

 private:
  uint64_t count_;
  uint64_t shape_;  // coll, dtype, op, in-place: a byte each; root: the high half
};

struct PlanKeyHash {
  size_t operator()(const PlanKey& k) const { return k.hash(); }
};

// Least recently used plans go first, once more than `maxPlans` are kept or
// their flows take more than `maxBytes`. Many distinct calls each step (a
// model's tensors all-reduced one by one, FSDP's layers of many shapes) keep
// every plan; a plan is rebuilt only after the others pushed it out. The most
// recent one is checked first, without the map: the repeated-call path.
class PlanCache {
 public:
  static constexpr size_t kMaxPlans = 1024;
  static constexpr size_t kMaxBytes = size_t(64) << 20;
  explicit PlanCache(size_t maxPlans = kMaxPlans, size_t maxBytes = kMaxBytes)
      : maxPlans_(maxPlans), maxBytes_(maxBytes) {}
  // The cached plan for `key`, now the most recent; nullptr if absent.
  Plan* find(const PlanKey& key) {
    if (front_ && frontKey_ == key) return front_;
    return findFurther(key);
  }
  // Keeps `plan` as the most recent (evicting the least recent beyond the
  // bounds, never the one just kept) and returns it.
  Plan* insert(const PlanKey& key, Plan plan);
  size_t size() const { return index_.size(); }
  // Plans let go so far (evicted or replaced): a Plan* taken while this was
  // the same still points at a cached plan.
  uint64_t evictions() const { return evictions_; }
  size_t bytes() const { return bytes_; }

 private:
  struct Entry {
    PlanKey key;
    std::unique_ptr<Plan> plan;
    size_t bytes;
  };
  using Order = std::list<Entry>;  // most recently used first
  Plan* findFurther(const PlanKey& key);
  void setFront();
  size_t maxPlans_, maxBytes_;
  size_t bytes_ = 0;
  uint64_t evictions_ = 0;
  Order order_;
  std::unordered_map<PlanKey, Order::iterator, PlanKeyHash> index_;
  Plan* front_ = nullptr;
  PlanKey frontKey_{Coll::kAllReduce, 0, strataFloat32, strataSum, 0, false};
};

// Memory a plan holds (its vectors and itself), for the cache's byte bound.
size_t planBytes(const Plan& plan);

}  // namespace strata
