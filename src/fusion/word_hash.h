// FNV-1a over whole 64-bit words: the hashes fusion compares across ranks
// (the negotiation's digest, the fused layout) and the overlap check's
// signature. Words, not bytes: over a thousand tensors a byte at a time cost
// ~2% of a fused group.
#pragma once

#include <cstdint>

namespace strata {

struct WordHash {
  uint64_t h = 14695981039346656037ull;
  void mix(uint64_t v) { h = (h ^ v) * 1099511628211ull; }
};

}  // namespace strata
