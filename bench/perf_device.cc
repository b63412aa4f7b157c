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

void synchronize() { check(cudaStreamSynchronize(theStream), "cudaStreamSynchronize"); }

// Both on the rank's stream, and finished on return: a plain cudaMemcpy from
// pageable memory may return before its bytes land, and the collectives' stream
// is non-blocking, so it would not wait for them. (With plain copies, on an
// H200, every in-place result at 8 B - 8 KiB was wrong and every out-of-place
// one right; the in-place input is uploaded just before the call.)
void upload(void* device, const void* host, size_t bytes) {
  check(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, theStream), "cudaMemcpyAsync to the device");
  synchronize();
}

void download(void* host, const void* device, size_t bytes) {
  check(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, theStream), "cudaMemcpyAsync from the device");
  synchronize();
}

void* stream() { return theStream; }

}  // namespace perfdev
