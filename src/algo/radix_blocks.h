// Radix-k reduce-scatter and all-gather over any team of ranks (Bruck's
// k-port pattern): in each step a member exchanges with k-1 partners at once,
// so a team of t takes ceil(log_k t) steps instead of the log-step emitters'
// ceil(log2 t), and still sends and receives only the minimal (t-1)/t of the
// data (no block moves twice). For thousands of nodes, where every log2 step
// costs a network latency: 4096 nodes take 4 steps of 7 partners instead of 12
// of one (docs/scaling.md has what that is worth).
//  - all-gather, step j (distance d = k^j): I hold blocks me .. me+d-1; for
//    i = 1..k-1 I send them to me - i*d and receive blocks me+i*d .. from
//    me + i*d; the last step sends only the blocks still missing there;
//  - reduce-scatter: the same steps reversed in time and direction: my
//    partials of blocks me+i*d .. go to me + i*d, and partials of my blocks
//    me .. me+d-1 come from me - i*d, reduced into mine.
// A step's k-1 messages leave at once (one phase, cut into slices as the
// log-step emitters cut theirs). A reduce-scatter step then reduces what the
// partners sent one partner at a time, each in its own phase, so the sum is
// taken in one fixed order (partner 1, 2, ...) whatever order the data
// arrives in; the later partners' data waits in the link meanwhile.
#pragma once

#include <vector>

#include "algo/ring_blocks.h"

namespace strata {

// The radices worth trying for a team of t, one per step count: for each
// from the fewest steps that partners of at most kMaxRadix - 1 allow to
// ceil(log2 t), the smallest radix that takes that many (fewest messages at
// once); so the first has the fewest steps, the last is 2. Which of them an
// exchange takes is the cost model's choice (hierRadixFor, cost_model.h):
// fewer steps save latencies, more partners at once cost a message gap each.
constexpr int kMaxRadix = 64;
std::vector<int> radixCandidates(int t);
// The fewest steps' radix, radixCandidates(t).front().
int radixFor(int t);

// One message of a step: the peer (team index) and the blocks (owner
// indices), in wire order.
struct RadixTransfer {
  int peer = 0;
  std::vector<int> blocks;
};
// One step: sends[i] and recvs[i] are the exchange with partner i + 1.
struct RadixStep {
  std::vector<RadixTransfer> sends, recvs;
};
// Member `me`'s steps in a team of `t` with radix `radix` (>= 2).
std::vector<RadixStep> radixAllGatherSteps(int t, int me, int radix);
std::vector<RadixStep> radixReduceScatterSteps(int t, int me, int radix);

// As emitLogReduceScatter / emitLogAllGather (algo/log_blocks.h), with the
// same block conventions, with radix `radix`.
void emitRadixReduceScatter(Plan& plan, const Team& team, const std::vector<RingBlock>& blocks, size_t sliceBytes,
                            bool finalize, int radix);
void emitRadixAllGather(Plan& plan, const Team& team, const std::vector<RingBlock>& blocks, size_t sliceBytes,
                        int radix);

}  // namespace strata
