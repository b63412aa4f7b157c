// Copies with streaming (non-temporal) stores: the bytes go to memory
// without first reading the destination's lines into the cache and without
// pushing what the cache holds out. For destinations larger than the cache
// will keep (a collective's output of more than this rank's share of the
// last-level cache) and for packets a reader on another core should find in
// memory, not in the writer's cache (the shm ring's streaming store mode).
#pragma once

#include <cstddef>

namespace strata::kernels {

// Copies n bytes from src to dst (any alignment of either; they must not
// overlap), then fences the streaming stores, so that they are ordered
// before any later store (a release that publishes them, a flag another
// thread waits on). A plain memcpy where the CPU has no streaming stores.
void streamingCopy(void* dst, const void* src, size_t n);

// The same without the closing fence, for a caller that streams a buffer in
// pieces and fences once, after the last (streamingFence).
void streamingCopyUnfenced(void* dst, const void* src, size_t n);
void streamingFence();

}  // namespace strata::kernels
