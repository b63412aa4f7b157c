// The reduce-and-copy kernels (one per dtype x op) and their launcher. The
// grid is persistent: as many blocks as fit on the device at once (from its
// multiprocessor count and the kernel's occupancy), fewer when the data is
// small, each thread striding over the buffers (reduce_copy_body.h).
#include <cuda_runtime.h>


#include "core/dtype.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/host_bodies.h"
#include "kernels/cuda/launch_util.h"
#include "kernels/cuda/reduce_copy_body.h"

namespace strata::cuda {
namespace {

constexpr int kThreads = 512;

// Blocks a multiprocessor should hold at once, which caps the registers a
// thread may use. The 16-bit kernels (convert to float32, combine, round back:
// twice float32's work per 16-byte pack) take 86 registers a thread unbounded
// (nvcc 13.0, sm_90), so one 512-thread block a multiprocessor; bounded to two
// (64 registers, a 4-byte spill) their sum ran at 0.97 of the device copy's
// bandwidth against 0.94 unbounded, on an H200 in one run (2026-11-28,
// docs/benchmarks/gpu-check.md). float32's kernels run at 0.99 with one.
template <class T>
constexpr int kMinBlocksPerSm = sizeof(T) == 2 ? 2 : 1;

template <class T, class Op, int MinBlocks = kMinBlocksPerSm<T>>
__global__ void __launch_bounds__(kThreads, MinBlocks) reduceCopyKernel(ReduceCopyArgs args) {
  body::reduceCopyWorker<T, Op>(args, uint64_t(blockIdx.x) * blockDim.x + threadIdx.x,
                                uint64_t(gridDim.x) * blockDim.x);
}

using KernelFn = void (*)(ReduceCopyArgs);

template <class Op>
KernelFn kernelFor(strataDataType_t dtype) {
  switch (dtype) {
    case strataInt8: return reduceCopyKernel<int8_t, Op>;
    case strataUint8: return reduceCopyKernel<uint8_t, Op>;
    case strataInt32: return reduceCopyKernel<int32_t, Op>;
    case strataUint32: return reduceCopyKernel<uint32_t, Op>;
    case strataInt64: return reduceCopyKernel<int64_t, Op>;
    case strataUint64: return reduceCopyKernel<uint64_t, Op>;
    case strataFloat16: return reduceCopyKernel<ops::Half, Op>;
    case strataBfloat16: return reduceCopyKernel<ops::Bf16, Op>;
    case strataFloat32: return reduceCopyKernel<float, Op>;
    case strataFloat64: return reduceCopyKernel<double, Op>;
    default: return nullptr;
  }
}

KernelFn kernelFor(strataDataType_t dtype, strataRedOp_t op) {
  switch (op) {
    case strataSum: case strataAvg: return kernelFor<ops::Sum>(dtype);
    case strataProd: return kernelFor<ops::Prod>(dtype);
    case strataMax: return kernelFor<ops::Max>(dtype);
    case strataMin: return kernelFor<ops::Min>(dtype);
    default: return nullptr;
  }
}

}  // namespace

bool built() { return true; }

std::string loadReduceCopyKernels() {
  for (int t = 0; t < strataNumTypes; ++t)
    for (int op = 0; op < strataNumOps; ++op) {
      const KernelFn kernel = kernelFor(strataDataType_t(t), strataRedOp_t(op));
      if (!kernel) continue;
      const std::string name = std::string("reduce-copy ") + dtypeName(strataDataType_t(t)) + " " +
                               redOpName(strataRedOp_t(op));
      if (std::string e = loadKernel(reinterpret_cast<const void*>(kernel), name.c_str()); !e.empty()) return e;
    }
  return "";
}

int visibleDevices() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear it: no driver or no device is not this process's error
    return 0;
  }
  return n;
}

namespace {

std::string launchReduceCopy(KernelFn kernel, const ReduceCopyArgs& args, strataDataType_t dtype,
                             strataRedOp_t op, void* stream) {
  if (std::string refused = checkReduceCopyArgs(args, dtype, op); !refused.empty()) return refused;
  if (!kernel) return sentence("reduce-copy: invalid dtype %d or op %d", int(dtype), int(op));
  if (args.count == 0) return "";
  const size_t size = dtypeSize(dtype);
  int device = 0;
  cudaError_t error = cudaGetDevice(&device);
  if (error != cudaSuccess) return sentence("reduce-copy: no usable CUDA device (%s)", cudaGetErrorString(error));
  // Enough threads for one round of unrolled packs each, at most the resident grid.
  const uint64_t packs = args.count * size / sizeof(body::Pack) + 1;
  const uint64_t wanted = (packs + uint64_t(kThreads) * body::kUnroll - 1) / (uint64_t(kThreads) * body::kUnroll);
  const uint64_t resident = uint64_t(residentBlocks(reinterpret_cast<const void*>(kernel), device, kThreads));
  const unsigned blocks = unsigned(wanted < resident ? wanted : resident);
  kernel<<<blocks, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(args);
  error = cudaGetLastError();
  if (error != cudaSuccess)
    return sentence("reduce-copy: launching %u blocks for %llu %s elements failed: %s", blocks,
                    static_cast<unsigned long long>(args.count), dtypeName(dtype), cudaGetErrorString(error));
  return "";
}

}  // namespace

std::string enqueueReduceCopy(const ReduceCopyArgs& args, strataDataType_t dtype, strataRedOp_t op,
                              void* stream) {
  return launchReduceCopy(kernelFor(dtype, op), args, dtype, op, stream);
}

std::string enqueueReduceCopyUnboundedRegisters(const ReduceCopyArgs& args, strataDataType_t dtype,
                                                void* stream) {
  KernelFn kernel = nullptr;
  if (dtype == strataFloat16) kernel = reduceCopyKernel<ops::Half, ops::Sum, 1>;
  if (dtype == strataBfloat16) kernel = reduceCopyKernel<ops::Bf16, ops::Sum, 1>;
  if (!kernel) return sentence("reduce-copy: the unbounded-register variant is built for float16 and bfloat16 only");
  return launchReduceCopy(kernel, args, dtype, strataSum, stream);
}

}  // namespace strata::cuda
