// Host side of the multi-tensor copy that needs no CUDA: chunk planning.
#include "kernels/cuda/cuda_kernels.h"

namespace strata::cuda {

uint64_t planMultiCopy(CopySegment* segments, int n) {
  uint64_t next = 0;
  for (int i = 0; i < n; ++i) {
    segments[i].firstChunk = next;
    next += (segments[i].bytes + kCopyChunkBytes - 1) / kCopyChunkBytes;
  }
  return next;
}

}  // namespace strata::cuda
