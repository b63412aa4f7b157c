// The set of fusion keys in flight (added, not completed): open addressing
// with linear probing in one array that grows by doubling, erase by
// backward shift (no tombstones). A training step adds and completes
// thousands of keys; std::unordered_set allocated and freed a node for each.
#pragma once

#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <vector>

namespace strata {

class KeySet {
 public:
  // False if `key` is already in the set.
  bool insert(uint64_t key) {
    if ((size_ + 1) * 4 > slots_.size() * 3) grow();
    size_t i = find(key);
    if (used_[i]) return false;
    used_[i] = 1;
    slots_[i] = key;
    ++size_;
    return true;
  }
  void erase(uint64_t key) {
    if (slots_.empty()) return;
    size_t i = find(key);
    if (!used_[i]) return;
    // Backward shift: move later members of the probe run into the hole
    // when their home slot does not lie (cyclically) after it.
    const size_t mask = slots_.size() - 1;
    for (size_t j = (i + 1) & mask; used_[j]; j = (j + 1) & mask) {
      const size_t home = homeOf(slots_[j]);
      if (((j - home) & mask) >= ((j - i) & mask)) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    used_[i] = 0;
    --size_;
  }
  // Empties the set, keeping its slots.
  void clear() {
    if (size_ == 0) return;
    std::fill(used_.begin(), used_.end(), uint8_t(0));
    size_ = 0;
  }
  bool contains(uint64_t key) const { return !slots_.empty() && used_[find(key)]; }
  size_t size() const { return size_; }

 private:
  size_t homeOf(uint64_t key) const {
    key ^= key >> 33;  // keys are often 0, 1, 2, ...: spread them
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    return size_t(key) & (slots_.size() - 1);
  }
  // The slot holding `key`, or the empty slot where it would go.
  size_t find(uint64_t key) const {
    const size_t mask = slots_.size() - 1;
    size_t i = homeOf(key);
    while (used_[i] && slots_[i] != key) i = (i + 1) & mask;
    return i;
  }
  void grow() {
    std::vector<uint64_t> old = std::move(slots_);
    std::vector<uint8_t> oldUsed = std::move(used_);
    slots_.assign(old.empty() ? 64 : old.size() * 2, 0);
    used_.assign(slots_.size(), 0);
    size_ = 0;
    for (size_t i = 0; i < old.size(); ++i)
      if (oldUsed[i]) insert(old[i]);
  }
  std::vector<uint64_t> slots_;  // size a power of two
  std::vector<uint8_t> used_;  // per slot: holds a key (bytes, not std::vector<bool>'s bits: no bit ops)
  size_t size_ = 0;
};

}  // namespace strata
