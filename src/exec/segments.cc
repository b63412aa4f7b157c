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
}

uint8_t* Segments::locate(size_t at, size_t* run) const {
  if (at >= bytes_ || ptrs_.empty())
    fail(strataInternalError, "fused buffer offset %zu is outside its %zu bytes", at, bytes_);
  auto it = std::upper_bound(starts_.begin(), starts_.end(), at);
  size_t i = size_t(it - starts_.begin()) - 1;
  size_t end = i + 1 < starts_.size() ? starts_[i + 1] : bytes_;
  *run = end - at;
  return ptrs_[i] + (at - starts_[i]);
}

}  // namespace strata
