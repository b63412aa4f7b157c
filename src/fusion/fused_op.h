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

// Tensors of at least this many bytes per block are used in place rather than packed:
// below it, a piece would cut the pipeline's fragments short.
constexpr size_t kDirectMinBytes = 64 * 1024;

// Runs `tensors` (validated; same communicator, collective, dtype, op and root;
// count > 0) as one collective. `keys` (optional, one per tensor) enter the
// layout hash, so that ranks pairing different keys fail with strataMismatch.
void runFused(const std::vector<const Request*>& tensors, const std::vector<uint64_t>* keys = nullptr);

// The hash every rank puts in the fused operation's descriptor.
uint32_t fusedLayoutHash(const std::vector<const Request*>& tensors, const std::vector<uint64_t>* keys);

}  // namespace strata
