#include "exec/segments.h"

#include <algorithm>

#include "core/error.h"

namespace strata {

void Segments::append(void* ptr, size_t bytes) {
  if (bytes == 0) return;
  auto* p = static_cast<uint8_t*>(ptr);
  // A piece that continues the previous one in memory extends it.
  if (!ptrs_.empty() && ptrs_.back() + (bytes_ - starts_.back()) == p) {
    bytes_ += bytes;
    return;
  }
  starts_.push_back(bytes_);
  ptrs_.push_back(p);
  bytes_ += bytes;
}

void Segments::clear() {
  starts_.clear();
  ptrs_.clear();
  bytes_ = 0;
  lastPiece_ = 0;
}

uint8_t* Segments::locate(size_t at, size_t* run) const {
  if (at >= bytes_ || ptrs_.empty())
    fail(strataInternalError, "fused buffer offset %zu is outside its %zu bytes", at, bytes_);
  size_t i = lastPiece_;
  if (!holds(i, at)) {
    if (holds(i + 1, at)) {
      ++i;
    } else {
      auto it = std::upper_bound(starts_.begin(), starts_.end(), at);
      i = size_t(it - starts_.begin()) - 1;
    }
  }
  lastPiece_ = i;
  *run = endOf(i) - at;
  return ptrs_[i] + (at - starts_[i]);
}

}  // namespace strata
