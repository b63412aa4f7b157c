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
// (polled): memory a stream may still copy from is freed only then.
inline bool eventDoneWithin(void* event, int timeoutMs) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
  bool done = false;
  while (cuda::queryEvent(event, &done).empty() && !done && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
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
