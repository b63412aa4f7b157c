// Data with one writer and any number of occasional readers, without a locked
// instruction on the writer's side: a sequence lock. The writer makes the
// version odd, stores, and makes it even again (plain stores on x86-64); a
// reader copies the data and keeps the copy only if the version was even and
// did not move meanwhile. The data itself is kept in relaxed atomics, so that
// a reader overlapping a write is no data race (ThreadSanitizer checks it as
// it checks everything else) and a torn copy is simply discarded.
//
// The single writer is the thread running the communicator's operations
// (one at a time, by the API's rules); readers are dumps, statistics and
// monitoring threads.
#pragma once

#include <atomic>
#include <cstdint>

namespace strata {

class SeqLock {
 public:
  void beginWrite() {
    version_.store(version_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
  }
  void endWrite() {
    version_.store(version_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }
  // Runs `copy` until it saw no write in progress; false if a write was
  // still in progress after `tries` attempts (a writer stopped inside one),
  // the last copy then possibly torn.
  template <class Copy>
  bool read(Copy&& copy, int tries = 100000) const {
    for (int i = 0; i < tries; ++i) {
      uint64_t before = version_.load(std::memory_order_acquire);
      copy();
      std::atomic_thread_fence(std::memory_order_acquire);
      if (!(before & 1) && version_.load(std::memory_order_relaxed) == before) return true;
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
    }
    return false;
  }

 private:
  std::atomic<uint64_t> version_{0};
};

// A counter with one writer: add() is a load and a store (no locked
// instruction); get() may run on any thread.
template <class T>
class SingleWriterCounter {
 public:
  void add(T v) { value_.store(value_.load(std::memory_order_relaxed) + v, std::memory_order_relaxed); }
  T get() const { return value_.load(std::memory_order_relaxed); }
  void set(T v) { value_.store(v, std::memory_order_relaxed); }  // writer only

 private:
  std::atomic<T> value_{0};
};

}  // namespace strata
