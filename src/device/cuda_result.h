// The device path's one way of turning a CUDA call's result (a sentence from
// kernels/cuda/device_runtime.h, "" on success) into strata's error, its
// scoped current device, and its wait before freeing memory a stream uses.
#pragma once

#include <chrono>
#include <string>
#include <thread>

#include "core/error.h"
#include "kernels/cuda/device_runtime.h"

namespace strata {

// Throws strataSystemError with CUDA's sentence unless `result` is "".
inline void cudaOk(const std::string& result) {
  if (!result.empty()) fail(strataSystemError, "%s", result.c_str());
}

// Whether the work recorded before `event` finished within `timeoutMs`
// (polled: yielding for the first 200 us, as GPU work in a step is usually
// short, then sleeping 50 us between looks). Memory a stream may still copy
// from is freed only then; a cuda_ipc step waits for its kernels this way so
// that a GPU that never runs them is a timeout, not a hang.
inline bool eventDoneWithin(void* event, int timeoutMs) {
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::milliseconds(timeoutMs);
  bool done = false;
  while (cuda::queryEvent(event, &done).empty() && !done) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) break;
    if (now - start < std::chrono::microseconds(200)) std::this_thread::yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
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
