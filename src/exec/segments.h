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
  size_t bytes() const { return starts_.back(); }
  size_t pieces() const { return ptrs_.size(); }
  void clear();

  // The memory at offset `at` of the range, and how many bytes from there lie
  // contiguously (to the end of that piece). Plans walk a range forwards, so
  // the piece of the previous lookup and the next one are tried (inline)
  // before a search. Throws for an offset outside the range.
  uint8_t* locate(size_t at, size_t* run) const {
    size_t i = lastPiece_;
    if (!holds(i, at)) {
      if (holds(i + 1, at)) lastPiece_ = ++i;
      else i = findPiece(at);
    }
    *run = starts_[i + 1] - at;
    return ptrs_[i] + (at - starts_[i]);
  }

 private:
  bool holds(size_t i, size_t at) const { return i < ptrs_.size() && starts_[i] <= at && at < starts_[i + 1]; }
  // The piece holding `at` (remembered as lastPiece_), or an error.
  size_t findPiece(size_t at) const;
  // Where each piece begins in the range, ascending, and then where the last
  // one ends (the range's size): piece i is [starts_[i], starts_[i + 1]).
  std::vector<size_t> starts_{0};
  std::vector<uint8_t*> ptrs_;
  mutable size_t lastPiece_ = 0;  // where the previous lookup landed (a hint only)
};

}  // namespace strata
