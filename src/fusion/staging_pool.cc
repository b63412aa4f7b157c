#include "fusion/staging_pool.h"

#include <algorithm>
#include <cstdlib>
#include <new>

namespace strata {

namespace {
// Free buffers kept per pool; more concurrent leases than this are freed on return.
constexpr size_t kMaxFree = 4;
}  // namespace

void StagingPool::FreeDeleter::operator()(uint8_t* p) const { std::free(p); }

StagingPool::Lease& StagingPool::Lease::operator=(Lease&& o) noexcept {
  if (this != &o) {
    release();
    pool_ = o.pool_;
    mem_ = std::move(o.mem_);
    capacity_ = o.capacity_;
    o.pool_ = nullptr;
  }
  return *this;
}

void StagingPool::Lease::release() {
  if (pool_ && mem_) pool_->giveBack(std::move(mem_), capacity_);
  pool_ = nullptr;
}

StagingPool::Lease StagingPool::acquire(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  // The smallest free buffer that fits.
  auto best = free_.end();
  for (auto it = free_.begin(); it != free_.end(); ++it)
    if (it->capacity >= bytes && (best == free_.end() || it->capacity < best->capacity)) best = it;
  if (best != free_.end()) {
    Free f = std::move(*best);
    free_.erase(best);
    return Lease(this, std::move(f.mem), f.capacity);
  }
  // None fits: replace the largest free one (it is too small) with a bigger one.
  if (!free_.empty()) {
    auto largest = std::max_element(free_.begin(), free_.end(),
                                    [](const Free& a, const Free& b) { return a.capacity < b.capacity; });
    held_ -= largest->capacity;
    free_.erase(largest);
  }
  size_t capacity = std::max<size_t>((bytes + 63) / 64 * 64, 4096);
  held_ += capacity;
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(64, capacity));
  if (!p) throw std::bad_alloc();
  return Lease(this, Mem(p), capacity);
}

void StagingPool::giveBack(Mem mem, size_t capacity) {
  std::lock_guard<std::mutex> lock(mu_);
  if (free_.size() >= kMaxFree) {
    held_ -= capacity;
    return;  // mem is freed here
  }
  free_.push_back(Free{std::move(mem), capacity});
}

size_t StagingPool::heldBytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_;
}

}  // namespace strata
