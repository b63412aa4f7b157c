#include "perf_device.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

namespace perfdev {

namespace {
cudaStream_t theStream = nullptr;

void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "strata-perf: %s failed: %s\n", what, cudaGetErrorString(e));
  std::exit(2);
}
}  // namespace

bool ready(int localRank, std::string* why) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    *why = "no CUDA device is visible";
    return false;
  }
  check(cudaSetDevice(localRank % devices), "cudaSetDevice");
  check(cudaStreamCreateWithFlags(&theStream, cudaStreamNonBlocking), "cudaStreamCreate");
  return true;
}

void* allocate(size_t bytes) {
  void* p = nullptr;
  check(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc");
  return p;
}

void release(void* ptr) { cudaFree(ptr); }

void upload(void* device, const void* host, size_t bytes) {
  check(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to the device");
}

void download(void* host, const void* device, size_t bytes) {
  check(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy from the device");
}

void* stream() { return theStream; }

void synchronize() { check(cudaStreamSynchronize(theStream), "cudaStreamSynchronize"); }

}  // namespace perfdev
