// What the CUDA launchers share: the size of a persistent grid, and error
// sentences.
#pragma once

#include <string>

namespace strata::cuda {

// Blocks of `threads` threads of `kernel` resident at once on `device`
// (multiprocessors x occupancy), measured once per kernel and device.
int residentBlocks(const void* kernel, int device, int threads);

// Each kernel file's part of loadKernels() (cuda_kernels.h): its kernels
// loaded on the current device through cudaFuncGetAttributes.
std::string loadReduceCopyKernels();
std::string loadMultiCopyKernels();
std::string loadStagingWaitKernel();
// One kernel: "" or a sentence naming `name` and CUDA's error.
std::string loadKernel(const void* kernel, const char* name);

// printf-style sentence for a launcher's error result.
std::string sentence(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace strata::cuda
