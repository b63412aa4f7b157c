// The handles of one kind the library has handed out and not yet destroyed
// (communicators, fusion contexts): an entry point rejects a handle not in
// here (destroyed, aborted, garbage) with a sentence instead of using it.
// A generation bumped on every change lets a thread trust the handle it
// checked last without the lock and the set: a training step adds a thousand
// tensors to one context, and the lookup was a fifth of an add.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <unordered_set>

namespace strata {

template <class T>
class LiveRegistry {
 public:
  // The one registry of T; it outlives static destructors (a handle may be
  // checked while the process exits).
  static LiveRegistry& get() {
    static LiveRegistry* r = new LiveRegistry();
    return *r;
  }
  void insert(T* p) {
    std::lock_guard<std::mutex> lock(mu_);
    live_.insert(p);
    generation_.fetch_add(1);
  }
  void erase(T* p) {
    std::lock_guard<std::mutex> lock(mu_);
    live_.erase(p);
    generation_.fetch_add(1);
  }
  bool isLive(T* p) {
    if (!p) return false;
    // One thread-local object: the check costs one TLS lookup (a call to
    // __tls_get_addr in a shared library), not one per variable.
    static thread_local Last last;
    if (p == last.handle && generation_.load(std::memory_order_acquire) == last.generation) return true;
    std::lock_guard<std::mutex> lock(mu_);
    last.handle = nullptr;
    if (!live_.count(p)) return false;
    last.handle = p;
    last.generation = generation_.load(std::memory_order_relaxed);
    return true;
  }
  // Calls f on every live handle, under the lock (no insert or erase meanwhile).
  template <class F>
  void forEach(F&& f) {
    std::lock_guard<std::mutex> lock(mu_);
    for (T* p : live_) f(p);
  }

 private:
  // The handle this thread found live last, and the generation then.
  struct Last {
    T* handle = nullptr;
    uint64_t generation = 0;
  };
  LiveRegistry() = default;
  std::mutex mu_;
  std::unordered_set<T*> live_;
  std::atomic<uint64_t> generation_{1};
};

}  // namespace strata
