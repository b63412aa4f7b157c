#include "exec/segments.h"

#include <algorithm>

#include "core/error.h"

namespace strata {

void Segments::append(void* ptr, size_t bytes) {
  if (bytes == 0) return;
  auto* p = static_cast<uint8_t*>(ptr);
  const size_t end = starts_.back();
  // A piece that continues the previous one in memory extends it.
  if (ptrs_.empty() || ptrs_.back() + (end - starts_[ptrs_.size() - 1]) != p) {
    ptrs_.push_back(p);
    starts_.push_back(end);  // the new piece starts where the range ended; this becomes its end
  }
  starts_.back() = end + bytes;
}

void Segments::clear() {
  starts_.assign(1, 0);
  ptrs_.clear();
  lastPiece_ = 0;
}

size_t Segments::findPiece(size_t at) const {
  if (at >= bytes())  // an empty range has 0 bytes
    fail(strataInternalError, "fused buffer offset %zu is outside its %zu bytes", at, bytes());
  const size_t i = size_t(std::upper_bound(starts_.begin(), starts_.end(), at) - starts_.begin()) - 1;
  lastPiece_ = i;
  return i;
}

}  // namespace strata
