// The device path's CUDA runtime calls (device_runtime.h), and the kernel
// that stands in for the driver's stream wait where a device lacks it.
#include <cuda.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstring>

#include "kernels/cuda/device_runtime.h"
#include "kernels/cuda/launch_util.h"

namespace strata::cuda {

namespace {

std::string check(cudaError_t e, const char* call) {
  if (e == cudaSuccess) return "";
  cudaGetLastError();  // do not leave it for the next, unrelated call
  return sentence("%s failed: %s (%s)", call, cudaGetErrorString(e), cudaGetErrorName(e));
}

cudaStream_t asStream(void* s) { return static_cast<cudaStream_t>(s); }
cudaEvent_t asEvent(void* e) { return static_cast<cudaEvent_t>(e); }

// One thread polls the host counter (over the bus; volatile so every read
// goes there) until it reaches `value`.
__global__ void waitForCounter(const volatile uint64_t* counter, uint64_t value) {
  while (*counter < value) __nanosleep(1000);
}

using WaitValue64Fn = CUresult (*)(CUstream, CUdeviceptr, cuuint64_t, unsigned int);

// The driver's cuStreamWaitValue64, found once through the runtime (libstrata
// links the runtime statically and does not link libcuda).
WaitValue64Fn driverWaitValue64() {
  static WaitValue64Fn fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
    cudaError_t e = cudaGetDriverEntryPointByVersion("cuStreamWaitValue64", &p, 12000, cudaEnableDefault, &found);
#else
    cudaError_t e = cudaGetDriverEntryPoint("cuStreamWaitValue64", &p, cudaEnableDefault, &found);
#endif
    if (e != cudaSuccess || found != cudaDriverEntryPointSuccess) {
      cudaGetLastError();
      return WaitValue64Fn(nullptr);
    }
    return reinterpret_cast<WaitValue64Fn>(p);
  }();
  return fn;
}

// Set once the driver has refused a stream wait: the kernel is used from then on.
std::atomic<bool> driverWaitRefused{false};

}  // namespace

std::string loadStagingWaitKernel() {
  return loadKernel(reinterpret_cast<const void*>(waitForCounter), "staging wait");
}

std::string deviceOfPointer(const void* ptr, int* device) {
  cudaPointerAttributes attr{};
  if (std::string e = check(cudaPointerGetAttributes(&attr, ptr), "cudaPointerGetAttributes"); !e.empty())
    return e;
  *device = attr.device;
  return "";
}

std::string currentDevice(int* device) { return check(cudaGetDevice(device), "cudaGetDevice"); }

std::string setDevice(int device) { return check(cudaSetDevice(device), "cudaSetDevice"); }

std::string allocPinned(size_t bytes, void** ptr) {
  *ptr = nullptr;
  return check(cudaHostAlloc(ptr, bytes ? bytes : 1, cudaHostAllocPortable | cudaHostAllocMapped),
               "cudaHostAlloc (pinned staging memory)");
}

void freePinned(void* ptr) {
  if (ptr && cudaFreeHost(ptr) != cudaSuccess) cudaGetLastError();
}

std::string allocDevice(size_t bytes, void** ptr) {
  *ptr = nullptr;
  return check(cudaMalloc(ptr, bytes ? bytes : 1), "cudaMalloc (IPC staging memory)");
}

void freeDevice(void* ptr) {
  if (ptr && cudaFree(ptr) != cudaSuccess) cudaGetLastError();
}

static_assert(sizeof(cudaIpcMemHandle_t) == kIpcHandleBytes, "cudaIpcMemHandle_t changed size");

std::string ipcExport(void* ptr, uint8_t handle[kIpcHandleBytes]) {
  cudaIpcMemHandle_t h{};
  std::string e = check(cudaIpcGetMemHandle(&h, ptr), "cudaIpcGetMemHandle");
  std::memcpy(handle, &h, kIpcHandleBytes);
  return e;
}

std::string ipcOpen(const uint8_t handle[kIpcHandleBytes], void** ptr) {
  cudaIpcMemHandle_t h{};
  std::memcpy(&h, handle, kIpcHandleBytes);
  *ptr = nullptr;
  return check(cudaIpcOpenMemHandle(ptr, h, cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle");
}

void ipcClose(void* ptr) {
  if (ptr && cudaIpcCloseMemHandle(ptr) != cudaSuccess) cudaGetLastError();
}

std::string createStream(void** stream) {
  cudaStream_t s = nullptr;
  std::string e = check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  *stream = s;
  return e;
}

void destroyStream(void* stream) {
  if (stream && cudaStreamDestroy(asStream(stream)) != cudaSuccess) cudaGetLastError();
}

std::string streamSynchronize(void* stream) {
  return check(cudaStreamSynchronize(asStream(stream)), "cudaStreamSynchronize");
}

std::string createEvent(void** event) {
  cudaEvent_t e = nullptr;
  std::string r = check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  *event = e;
  return r;
}

void destroyEvent(void* event) {
  if (event && cudaEventDestroy(asEvent(event)) != cudaSuccess) cudaGetLastError();
}

std::string recordEvent(void* event, void* stream) {
  return check(cudaEventRecord(asEvent(event), asStream(stream)), "cudaEventRecord");
}

std::string queryEvent(void* event, bool* done) {
  cudaError_t e = cudaEventQuery(asEvent(event));
  *done = e == cudaSuccess;
  if (e == cudaErrorNotReady) {
    cudaGetLastError();
    return "";
  }
  return check(e, "cudaEventQuery");
}

std::string streamWaitEvent(void* stream, void* event) {
  return check(cudaStreamWaitEvent(asStream(stream), asEvent(event), 0), "cudaStreamWaitEvent");
}

std::string copyAsync(void* dst, const void* src, size_t bytes, void* stream) {
  if (bytes == 0) return "";
  return check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, asStream(stream)), "cudaMemcpyAsync");
}

std::string copy2DAsync(void* dst, size_t dstPitch, const void* src, size_t srcPitch, size_t rowBytes,
                        size_t rows, void* stream) {
  if (rowBytes == 0 || rows == 0) return "";
  if (rows == 1) return copyAsync(dst, src, rowBytes, stream);
  // cudaMemcpy2DAsync takes pitches up to the device's limit (2^31 - 1 bytes
  // on current GPUs); rows further apart go one copy each.
  constexpr size_t kMaxPitch = 2147483647u;
  if (dstPitch > kMaxPitch || srcPitch > kMaxPitch) {
    for (size_t row = 0; row < rows; ++row)
      if (std::string e = copyAsync(static_cast<char*>(dst) + row * dstPitch,
                                    static_cast<const char*>(src) + row * srcPitch, rowBytes, stream);
          !e.empty())
        return e;
    return "";
  }
  return check(cudaMemcpy2DAsync(dst, dstPitch, src, srcPitch, rowBytes, rows, cudaMemcpyDefault, asStream(stream)),
               "cudaMemcpy2DAsync");
}

std::string streamWaitCounter(void* stream, const uint64_t* counter, uint64_t value, bool pollWithKernel) {
  void* onDevice = nullptr;
  if (std::string e = check(cudaHostGetDevicePointer(&onDevice, const_cast<uint64_t*>(counter), 0),
                            "cudaHostGetDevicePointer (staging counter)");
      !e.empty())
    return e;
  WaitValue64Fn driver = driverWaitValue64();
  if (driver && !pollWithKernel && !driverWaitRefused.load(std::memory_order_relaxed)) {
    CUresult r = driver(static_cast<CUstream>(stream), reinterpret_cast<CUdeviceptr>(onDevice), value,
                        CU_STREAM_WAIT_VALUE_GEQ);
    if (r == CUDA_SUCCESS) return "";
    if (r != CUDA_ERROR_NOT_SUPPORTED && r != CUDA_ERROR_INVALID_VALUE)
      return sentence("cuStreamWaitValue64 failed (CUresult %d)", int(r));
    driverWaitRefused.store(true);  // this device has no stream memory operations
  }
  waitForCounter<<<1, 1, 0, asStream(stream)>>>(static_cast<const volatile uint64_t*>(onDevice), value);
  return check(cudaGetLastError(), "launch of the staging wait kernel");
}

std::string streamIsCapturing(void* stream, bool* capturing) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  std::string e = check(cudaStreamIsCapturing(asStream(stream), &status), "cudaStreamIsCapturing");
  *capturing = status != cudaStreamCaptureStatusNone;
  return e;
}

}  // namespace strata::cuda
