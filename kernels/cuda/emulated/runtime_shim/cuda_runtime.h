// The CUDA runtime calls that the GPU tier's multi-process tests and
// strata-perf -G 1 make, on the emulated device (kernels/cuda/emulated), so
// that tests/gpu/device_collectives_test.cc and bench/perf_device.cc build
// unchanged with STRATA_CUDA=EMULATED (the sanitizer builds), which has no
// GPU. Only what those files call; a target opts in by putting this folder
// first on its include path.
#pragma once

#include <cstddef>
#include <cstring>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/device_runtime.h"
#include "kernels/cuda/emulated/emulated_device.h"

#define CUDART_CB

enum cudaError_t { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorNotReady = 600 };
enum cudaMemcpyKind { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2, cudaMemcpyDefault = 4 };
enum cudaStreamCaptureMode { cudaStreamCaptureModeThreadLocal = 1 };
constexpr unsigned cudaStreamNonBlocking = 1;
using cudaStream_t = void*;
using cudaGraph_t = void*;
using cudaHostFn_t = void (*)(void*);

inline cudaError_t emulatedResult(const std::string& e) { return e.empty() ? cudaSuccess : cudaErrorInvalidValue; }
inline const char* cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "emulated CUDA error"; }

inline cudaError_t cudaGetDeviceCount(int* count) {
  *count = strata::cuda::visibleDevices();
  return cudaSuccess;
}
inline cudaError_t cudaSetDevice(int device) { return emulatedResult(strata::cuda::setDevice(device)); }
template <class T>
cudaError_t cudaMalloc(T** ptr, size_t bytes) {
  void* p = nullptr;
  cudaError_t e = emulatedResult(strata::cuda::allocDevice(bytes, &p));
  *ptr = static_cast<T*>(p);
  return e;
}
inline cudaError_t cudaFree(void* ptr) {
  strata::cuda::freeDevice(ptr);
  return cudaSuccess;
}
template <class T>
cudaError_t cudaMallocHost(T** ptr, size_t bytes) {
  void* p = nullptr;
  cudaError_t e = emulatedResult(strata::cuda::allocPinned(bytes, &p));
  *ptr = static_cast<T*>(p);
  return e;
}
inline cudaError_t cudaFreeHost(void* ptr) {
  strata::cuda::freePinned(ptr);
  return cudaSuccess;
}
inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned) {
  return emulatedResult(strata::cuda::createStream(stream));
}
inline cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  strata::cuda::destroyStream(stream);
  return cudaSuccess;
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  return emulatedResult(strata::cuda::streamSynchronize(stream));
}
inline cudaError_t cudaStreamQuery(cudaStream_t stream) {
  strata::cuda::emulated::Stream& s = strata::cuda::emulated::streamOf(stream);
  return s.reached(s.enqueued()) ? cudaSuccess : cudaErrorNotReady;
}
inline cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind, cudaStream_t stream) {
  return emulatedResult(strata::cuda::copyAsync(dst, src, bytes, stream));
}
// Synchronous, on the legacy default stream, like cudaMemcpy.
inline cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  cudaError_t e = cudaMemcpyAsync(dst, src, bytes, kind, nullptr);
  return e == cudaSuccess ? cudaStreamSynchronize(nullptr) : e;
}
inline cudaError_t cudaMemset(void* dst, int value, size_t bytes) {
  strata::cuda::emulated::streamOf(nullptr).enqueue([=] { std::memset(dst, value, bytes); });
  return cudaStreamSynchronize(nullptr);
}
// The emulator's legacy-stream calls above are synchronous already.
inline cudaError_t cudaDeviceSynchronize() { return cudaStreamSynchronize(nullptr); }
inline cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* arg) {
  strata::cuda::emulated::streamOf(stream).enqueue([=] { fn(arg); });
  return cudaSuccess;
}
inline cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode) {
  strata::cuda::emulated::streamOf(stream).capturing = true;
  return cudaSuccess;
}
inline cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  strata::cuda::emulated::streamOf(stream).capturing = false;
  *graph = nullptr;
  return cudaSuccess;
}
inline cudaError_t cudaGraphDestroy(cudaGraph_t) { return cudaSuccess; }
