// The device path's one way of turning a CUDA call's result (a sentence from
// kernels/cuda/device_runtime.h, "" on success) into strata's error, its
// scoped current device, and its wait before freeing memory a stream uses.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "core/error.h"
#include "kernels/cuda/device_runtime.h"

namespace strata {

// Throws strataSystemError with CUDA's sentence unless `result` is "".
inline void cudaOk(const std::string& result) {
  if (!result.empty()) fail(strataSystemError, "%s", result.c_str());
}

// How the device path's host threads wait for the GPU: yielding for the
// first kSpinUs of a wait, then napping 50 us between looks, so an idle queue
// costs no core. The spin is as long as the host waiter's (exec/waiter.cc):
// a nap can last far longer than asked on some machines. On the H200's VM
// (2026-11-28) the device steps' times came in whole 4 ms ticks with a 200 us
// spin (docs/benchmarks/gpu-check.md; strata-gpu-staging times a nap there).
class GpuPoll {
 public:
  static constexpr int64_t kSpinUs = 2000;
  void pause() {
    if (std::chrono::steady_clock::now() - start_ < std::chrono::microseconds(kSpinUs))
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  bool pastMs(int ms) const {
    return std::chrono::steady_clock::now() - start_ >= std::chrono::milliseconds(ms);
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// Whether the work recorded before `event` finished within `timeoutMs`
// (polled as GpuPoll says). Memory a stream may still copy from is freed only
// then; a cuda_ipc step waits for its kernels this way so that a GPU that
// never runs them is a timeout, not a hang.
inline bool eventDoneWithin(void* event, int timeoutMs) {
  GpuPoll poll;
  bool done = false;
  while (cuda::queryEvent(event, &done).empty() && !done && !poll.pastMs(timeoutMs)) poll.pause();
  return done;
}

// Makes `device` current for the scope, so that events, streams and kernel
// launches of one device meet (the caller's thread may have another device
// current), then gives the caller's back.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    cudaOk(cuda::currentDevice(&previous_));
    if (previous_ != device) cudaOk(cuda::setDevice(device));
    else previous_ = -1;
  }
  ~DeviceScope() {
    if (previous_ >= 0) cuda::setDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = -1;
};

}  // namespace strata
