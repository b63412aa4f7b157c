// Log-step reduce-scatter and all-gather over any team of ranks: every member
// sends and receives the minimal (t-1)/t of the data, as a ring does, in
// ceil(log2 t) steps instead of t-1. Blocks are as the ring emitters take them
// (algo/ring_blocks.h), exactly one per member (blocks[q].owner == q; a block
// may be empty, e.g. a node without a rank of some local index), each one run.
//  - a team whose size is a power of two: recursive halving (reduce-scatter)
//    and recursive doubling (all-gather), exchanges between partners q ^ 2^k;
//  - any other size: Bruck's all-gather (step k: send what I hold to q - 2^k,
//    receive from q + 2^k; the last step sends only the blocks still missing
//    there) and, for reduce-scatter, the same steps reversed in time and
//    direction, each reducing what it receives. No step moves a block twice,
//    so the bytes stay minimal without the pre/post fold step that doubles
//    the traffic of the members that fold.
// Each step is cut into pipeline slices of about `chunkBytes`, one phase each
// (a slice's sends and receives progress together, so no step can block on
// link buffering); see stepSlices in log_blocks.cc for why not one phase.
#pragma once

#include <vector>

#include "algo/ring_blocks.h"

namespace strata {

// blocks[q].src: my contribution to block q; blocks[me].dst: where my block's
// result lands; blocks[q].dst for q != me: where this member may keep its
// partial sums of block q (may equal src when that is writable; invalid:
// scratch is reserved where needed). `finalize`: the last reduction of my
// block is the operation's final one.
void emitLogReduceScatter(Plan& plan, const Team& team, const std::vector<RingBlock>& blocks, size_t chunkBytes,
                          bool finalize);

// blocks[me].src: my data; blocks[q].dst: where block q lands on me.
void emitLogAllGather(Plan& plan, const Team& team, const std::vector<RingBlock>& blocks, size_t chunkBytes);

// All-reduce of `elems` elements at `buf` (in place) over the team: a log-step
// reduce-scatter of team-size sub-blocks, then their log-step all-gather
// (Rabenseifner's algorithm for powers of two; for other sizes the Bruck
// patterns, so no member moves more than the minimal 2(t-1)/t of the data).
// `finalize`: the reduce-scatter's last reductions are the operation's final ones.
void emitLogAllReduceInPlace(Plan& plan, const Team& team, Ref buf, size_t elems, size_t chunkBytes, bool finalize);

// The shape of one step, the same for every member: the partner is member
// q ^ distance (pairwise exchanges) or q + distance / q - distance (Bruck:
// sending to one side, receiving from the other), and `blocks` blocks move
// each way. The cost model walks these.
struct LogStepShape {
  bool exchange = false;  // partner q ^ distance
  int distance = 1;
  int blocks = 1;
  int sendsTo(int q, int t, bool reduceScatter) const {
    if (exchange) return q ^ distance;
    return reduceScatter ? (q + distance) % t : (q - distance + t) % t;
  }
};
std::vector<LogStepShape> logStepShapes(int t, bool reduceScatter);

// The blocks (member indices) one step moves, as both partners see it.
struct LogStep {
  int sendTo = 0, recvFrom = 0;          // team indices
  std::vector<int> sent, received;       // block (= owner) indices, in wire order
};
// The steps of member `me` of a team of `t`, in order (reduce-scatter: the
// reverse pattern; both patterns as described above). The cost model walks
// them too.
std::vector<LogStep> logReduceScatterSteps(int t, int me);
std::vector<LogStep> logAllGatherSteps(int t, int me);

}  // namespace strata
