// The multi-tensor copy kernel and its launcher (cuda_kernels.h: one launch
// packs or unpacks a fusion bucket of any number of tensors).
#include <cuda_runtime.h>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/launch_util.h"
#include "kernels/cuda/multi_copy_body.h"

namespace strata::cuda {
namespace {

constexpr int kCopyThreads = 512;

__global__ void __launch_bounds__(kCopyThreads) multiCopyKernel(const CopySegment* table, int n, uint64_t chunks) {
  body::multiCopyBlock(table, n, chunks, blockIdx.x, gridDim.x, threadIdx.x, blockDim.x);
}

// The table in the parameters: __grid_constant__ lets the body take its
// address without a per-thread copy.
__global__ void __launch_bounds__(kCopyThreads) inlineMultiCopyKernel(const __grid_constant__ InlineCopyTable t) {
  body::multiCopyBlock(t.segments, t.n, t.chunks, blockIdx.x, gridDim.x, threadIdx.x, blockDim.x);
}

static_assert(sizeof(InlineCopyTable) <= 4096, "an inline copy table must fit the 4 KiB of kernel parameters");

}  // namespace

std::string loadMultiCopyKernels() {
  if (std::string e = loadKernel(reinterpret_cast<const void*>(multiCopyKernel), "multi-copy"); !e.empty()) return e;
  return loadKernel(reinterpret_cast<const void*>(inlineMultiCopyKernel), "inline multi-copy");
}

std::string enqueueMultiCopy(const CopySegment* table, int n, uint64_t chunks, void* stream) {
  if (n < 0 || (n > 0 && !table)) return sentence("multi-copy: %d segments at %p", n, static_cast<const void*>(table));
  if (n == 0 || chunks == 0) return "";
  int device = 0;
  cudaError_t error = cudaGetDevice(&device);
  if (error != cudaSuccess) return sentence("multi-copy: no usable CUDA device (%s)", cudaGetErrorString(error));
  const uint64_t resident =
      uint64_t(residentBlocks(reinterpret_cast<const void*>(multiCopyKernel), device, kCopyThreads));
  const unsigned blocks = unsigned(chunks < resident ? chunks : resident);
  multiCopyKernel<<<blocks, kCopyThreads, 0, static_cast<cudaStream_t>(stream)>>>(table, n, chunks);
  error = cudaGetLastError();
  if (error != cudaSuccess)
    return sentence("multi-copy: launching %u blocks for %d segments failed: %s", blocks, n, cudaGetErrorString(error));
  return "";
}

std::string enqueueInlineMultiCopy(const CopySegment* segments, int n, void* stream) {
  if (n < 0 || (n > 0 && !segments))
    return sentence("inline multi-copy: %d segments at %p", n, static_cast<const void*>(segments));
  int device = 0;
  cudaError_t error = cudaGetDevice(&device);
  if (error != cudaSuccess) return sentence("inline multi-copy: no usable CUDA device (%s)", cudaGetErrorString(error));
  const uint64_t resident =
      uint64_t(residentBlocks(reinterpret_cast<const void*>(inlineMultiCopyKernel), device, kCopyThreads));
  for (const InlineCopyTable& t : inlineCopyTables(segments, n)) {
    if (t.chunks == 0) continue;
    const unsigned blocks = unsigned(t.chunks < resident ? t.chunks : resident);
    inlineMultiCopyKernel<<<blocks, kCopyThreads, 0, static_cast<cudaStream_t>(stream)>>>(t);
    error = cudaGetLastError();
    if (error != cudaSuccess)
      return sentence("inline multi-copy: launching %u blocks for %d segments failed: %s", blocks, t.n,
                      cudaGetErrorString(error));
  }
  return "";
}

}  // namespace strata::cuda
