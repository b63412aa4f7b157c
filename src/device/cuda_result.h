// The device path's one way of turning a CUDA call's result (a sentence from
// kernels/cuda/device_runtime.h, "" on success) into strata's error.
#pragma once

#include <string>

#include "core/error.h"

namespace strata {

// Throws strataSystemError with CUDA's sentence unless `result` is "".
inline void cudaOk(const std::string& result) {
  if (!result.empty()) fail(strataSystemError, "%s", result.c_str());
}

}  // namespace strata
