// The device path's one way of turning a CUDA call's result (a sentence from
// kernels/cuda/device_runtime.h, "" on success) into strata's error, and its
// scoped current device.
#pragma once

#include <string>

#include "core/error.h"
#include "kernels/cuda/device_runtime.h"

namespace strata {

// Throws strataSystemError with CUDA's sentence unless `result` is "".
inline void cudaOk(const std::string& result) {
  if (!result.empty()) fail(strataSystemError, "%s", result.c_str());
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
