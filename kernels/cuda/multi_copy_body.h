// The body of the multi-tensor copy kernel (cuda_kernels.h: CopySegment), as
// a function of one block's index among `blocks` and one thread's among
// `threads`: on the GPU the grid's, in the CPU test every pair in turn.
// Block b copies chunks b, b + blocks, ...; it finds a chunk's segment by
// binary search over the segments' first chunks, and its threads copy the
// chunk in 16-byte packs when source and destination share their offset from
// a 16-byte boundary (bytes before and after one by one), else byte by byte.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/element_ops.h"

namespace strata::cuda::body {

// The segment holding chunk c: the last with firstChunk <= c (segments of 0
// bytes share their successor's first chunk and are never chosen).
STRATA_HD int segmentOfChunk(const CopySegment* table, int n, uint64_t c) {
  int lo = 0, hi = n;  // answer in [lo, hi)
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    if (table[mid].firstChunk <= c) lo = mid;
    else hi = mid;
  }
  return lo;
}

STRATA_HD void copyBytes(uint8_t* dst, const uint8_t* src, uint64_t bytes, uint64_t thread, uint64_t threads) {
  const uintptr_t offset = reinterpret_cast<uintptr_t>(dst) % 16;
  uint64_t head = bytes, packs = 0;
  if (reinterpret_cast<uintptr_t>(src) % 16 == offset) {
    head = (16 - offset) % 16;
    if (head > bytes) head = bytes;
    packs = (bytes - head) / 16;
  }
  for (uint64_t i = thread; i < head; i += threads) dst[i] = src[i];
  for (uint64_t p = thread; p < packs; p += threads) {
#if defined(__CUDA_ARCH__)
    reinterpret_cast<uint4*>(dst + head)[p] = reinterpret_cast<const uint4*>(src + head)[p];
#else
    std::memcpy(dst + head + 16 * p, src + head + 16 * p, 16);
#endif
  }
  for (uint64_t i = head + 16 * packs + thread; i < bytes; i += threads) dst[i] = src[i];
}

STRATA_HD void multiCopyBlock(const CopySegment* table, int n, uint64_t chunks, uint64_t block, uint64_t blocks,
                              uint64_t thread, uint64_t threads) {
  for (uint64_t c = block; c < chunks; c += blocks) {
    const CopySegment& s = table[segmentOfChunk(table, n, c)];
    const uint64_t offset = (c - s.firstChunk) * kCopyChunkBytes;
    const uint64_t length = s.bytes - offset < kCopyChunkBytes ? s.bytes - offset : kCopyChunkBytes;
    copyBytes(static_cast<uint8_t*>(s.dst) + offset, static_cast<const uint8_t*>(s.src) + offset, length, thread,
              threads);
  }
}

}  // namespace strata::cuda::body
