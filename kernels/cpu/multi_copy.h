// Packing and unpacking for fusion: one call copies the pieces of many
// tensors (a list of items) into or out of a fused buffer.
#pragma once

#include <cstddef>

namespace strata::kernels {

struct CopyItem {
  void* dst;
  const void* src;
  size_t bytes;
};

// Copies every item; items must not overlap each other. Small pieces are
// copied inline with 32-byte moves, large ones by the C library's memcpy
// (which picks non-temporal stores for very large copies). One thread: with
// as many ranks as cores (the usual layout), a helper thread only steals a
// core from another rank; docs/benchmarks/fusion.md has the measurements.
void multiCopy(const CopyItem* items, size_t count);

}  // namespace strata::kernels
