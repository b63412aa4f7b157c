// Recursive halving / doubling all-reduce (Rabenseifner's) over any team, in
// place: log2(p) halving steps leave each member one fully reduced part, and
// log2(p) doubling steps gather the parts back. Every member sends and
// receives 2(p-1)/p of the data, like a ring, in 2 log2(p) steps instead of
// 2(p-1): the bandwidth-optimal choice for many nodes. With a team size not a
// power of two p, the first 2(n-p) members pair up first (the even one hands
// its data to the odd one and gets the result back at the end), which costs
// two extra whole-message steps on those members.
#pragma once

#include "algo/ring_blocks.h"

namespace strata {

// `finalize` marks the last halving step's reductions as the operation's final ones.
void emitHalvingDoublingAllReduceInPlace(Plan& plan, const Team& team, Ref buf, size_t elems, size_t chunkBytes,
                                         bool finalize);

}  // namespace strata
