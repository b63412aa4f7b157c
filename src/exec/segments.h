// A buffer made of pieces lying anywhere in memory, seen by a plan as one
// range of bytes. Fusion runs one collective over many tensors this way: a
// large tensor is a piece of the fused buffer where it lies (no copy), small
// ones are packed into one pooled piece.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace strata {

class Segments {
 public:
  // Appends `bytes` bytes at `ptr` to the end of the range (empty pieces are skipped).
  void append(void* ptr, size_t bytes);
  size_t bytes() const { return bytes_; }
  size_t pieces() const { return ptrs_.size(); }
  void clear();

  // The memory at offset `at` of the range, and how many bytes from there lie
  // contiguously (to the end of that piece). Plans walk a range forwards, so
  // the piece of the previous lookup or the next one is tried before a search.
  uint8_t* locate(size_t at, size_t* run) const;

 private:
  size_t endOf(size_t i) const { return i + 1 < starts_.size() ? starts_[i + 1] : bytes_; }
  bool holds(size_t i, size_t at) const { return i < starts_.size() && starts_[i] <= at && at < endOf(i); }
  std::vector<size_t> starts_;  // offset in the range where each piece begins, ascending
  std::vector<uint8_t*> ptrs_;
  size_t bytes_ = 0;
  mutable size_t lastPiece_ = 0;  // where the previous lookup landed (a hint only)
};

}  // namespace strata
