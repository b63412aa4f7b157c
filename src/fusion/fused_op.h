// One collective over many tensors: the tensors' pieces are laid out as one
// fused buffer in an order every rank computes alike (small tensors first,
// then large ones; for reduce-scatter, all-gather and all-to-all rank-major,
// so block r of the fused buffer holds block r of every tensor). Large
// tensors take part where they lie; small ones are packed into a pooled
// staging buffer by one multi-tensor copy before and unpacked after.
#pragma once

#include <cstdint>
#include <vector>

#include "exec/request.h"

namespace strata {

// Tensors of at least this many bytes per block take part where they lie;
// smaller ones are packed. A piece costs the executor a lookup and a short
// copy or reduce call at every step that crosses it (~0.1-0.2 us), packing
// costs two passes over the bytes (~0.2 ns/B): even at 4 KiB, pieces were
// faster (docs/benchmarks/fusion.md), so only tiny tensors are packed.
constexpr size_t kDirectMinBytes = 2048;

// Runs `tensors` (validated; same communicator, collective, dtype, op and root;
// count > 0) as one collective. `keys` (optional, one per tensor) enter the
// layout hash, so that ranks pairing different keys fail with strataMismatch.
void runFused(const std::vector<const Request*>& tensors, const std::vector<uint64_t>* keys = nullptr);

// The hash every rank puts in the fused operation's descriptor.
uint32_t fusedLayoutHash(const std::vector<const Request*>& tensors, const std::vector<uint64_t>* keys);

}  // namespace strata
