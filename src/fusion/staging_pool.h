// Staging memory for fused buffers, pooled per communicator: a fused
// operation leases a buffer and gives it back when done, so a training loop
// that repeats the same steps allocates nothing after the first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace strata {

class StagingPool {
  struct FreeDeleter {
    void operator()(uint8_t* p) const;
  };
  using Mem = std::unique_ptr<uint8_t, FreeDeleter>;

 public:
  // A leased buffer; returns to the pool when destroyed.
  class Lease {
   public:
    Lease() = default;
    Lease(StagingPool* pool, Mem mem, size_t capacity)
        : pool_(pool), mem_(std::move(mem)), capacity_(capacity) {}
    Lease(Lease&&) = default;
    Lease& operator=(Lease&& o) noexcept;
    ~Lease() { release(); }
    uint8_t* data() const { return mem_.get(); }

   private:
    void release();
    StagingPool* pool_ = nullptr;
    Mem mem_;
    size_t capacity_ = 0;
  };

  // A buffer of at least `bytes` bytes (64-byte aligned), reusing a free one when it fits.
  Lease acquire(size_t bytes);
  // Bytes held by the pool (leased or free), for tests and stats.
  size_t heldBytes() const;

 private:
  struct Free {
    Mem mem;
    size_t capacity;
  };
  void giveBack(Mem mem, size_t capacity);

  mutable std::mutex mu_;
  std::vector<Free> free_;
  size_t held_ = 0;
};

}  // namespace strata
