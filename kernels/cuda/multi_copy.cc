// Host side of the multi-tensor copy that needs no CUDA: chunk planning, and
// cutting a by-value copy into launches.
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

std::vector<InlineCopyTable> inlineCopyTables(const CopySegment* segments, int n) {
  std::vector<InlineCopyTable> tables;
  for (int first = 0; first < n; first += kInlineCopySegments) {
    InlineCopyTable& t = tables.emplace_back();
    t.n = n - first < kInlineCopySegments ? n - first : kInlineCopySegments;
    for (int i = 0; i < t.n; ++i) t.segments[i] = segments[first + i];
    t.chunks = planMultiCopy(t.segments, t.n);
  }
  return tables;
}

}  // namespace strata::cuda
