#include "kernels/cuda/launch_util.h"

#include <cuda_runtime.h>

#include <cstdarg>
#include <cstdio>
#include <mutex>

#include "kernels/cuda/cuda_kernels.h"

namespace strata::cuda {

int residentBlocks(const void* kernel, int device, int threads) {
  struct Entry {
    const void* kernel;
    int device, threads, blocks;
  };
  static std::mutex mutex;
  static Entry cache[256];
  static int used = 0;
  std::lock_guard<std::mutex> lock(mutex);
  for (int i = 0; i < used; ++i)
    if (cache[i].kernel == kernel && cache[i].device == device && cache[i].threads == threads)
      return cache[i].blocks;
  int sms = 1, perSm = 1;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || sms < 1) sms = 1;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, threads, 0) != cudaSuccess || perSm < 1)
    perSm = 1;
  cudaGetLastError();  // a failed query above is not the caller's error
  const int blocks = sms * perSm;
  if (used < 256) cache[used++] = {kernel, device, threads, blocks};
  return blocks;
}

std::string loadKernel(const void* kernel, const char* name) {
  cudaFuncAttributes attributes{};
  const cudaError_t e = cudaFuncGetAttributes(&attributes, kernel);
  if (e == cudaSuccess) return "";
  cudaGetLastError();
  return sentence("loading the %s kernel on the device failed: %s", name, cudaGetErrorString(e));
}

std::string loadKernels() {
  for (std::string (*load)() : {loadReduceCopyKernels, loadMultiCopyKernels, loadStagingWaitKernel})
    if (std::string e = load(); !e.empty()) return e;
  return "";
}

std::string sentence(const char* format, ...) {
  char text[512];
  va_list args;
  va_start(args, format);
  vsnprintf(text, sizeof text, format, args);
  va_end(args);
  return text;
}

}  // namespace strata::cuda
