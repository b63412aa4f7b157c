// A copy to two places from one read of the source: a rank that sends its own
// block through the shm ring and copies it into an output beyond the cache
// (written streaming) writes the ring's slot and the output in one pass over
// the block, instead of copying it into the slot and then again (from cache)
// into place. 32 MiB into 512 KiB slots and streamed into place took 5.3-5.6
// ms in two passes, 3.6-3.8 in one (AVX-512; 4.3-5.1 with 16-byte moves; with
// a second process doing the same on the other core, 16-byte moves 4.2-4.7
// against 5.3-5.7: Intel Xeon VM). Into an output in the cache two passes
// cost less (the second reads the source from cache, the C library's copies
// align their stores): 2 MiB calls, 7.3 ms per 64 MiB against 8.1, so shm
// fuses only outputs written streaming.
#pragma once

#include <cstddef>

namespace strata::kernels {

// Copies n bytes from src to `first` and to `second`; either destination is
// written with streaming stores where asked (streaming_copy.h: for outputs
// beyond the cache, or a slot its reader prefers in memory), and then fenced
// before this returns. Any alignment; the destinations must not overlap
// each other or the source.
void copyToTwo(void* first, bool streamFirst, void* second, bool streamSecond, const void* src, size_t n);
// The same with the 16-byte moves copyToTwo uses where the CPU has no
// AVX-512, on any CPU (for tests).
void copyToTwoSixteenByteMoves(void* first, bool streamFirst, void* second, bool streamSecond, const void* src,
                               size_t n);

}  // namespace strata::kernels
