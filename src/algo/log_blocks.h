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
// Each step is cut into pipeline slices of about `sliceBytes`, one phase each
// (a slice's sends and receives progress together, so no step can block on
// link buffering); see stepSlices in log_blocks.cc for why not one phase,
// and linkPhaseBytes for the slice's size.
#pragma once

#include <vector>

#include "algo/ring_blocks.h"
#include "topo/topology.h"

namespace strata {

// The pipeline slice of a phase that crosses the topology's links: a log
// step's, and a hierarchical ring's across nodes. About a millisecond of the
// crossed link's time, at least 64 KiB, at most `chunkBytes` (the ring's
// slice). Unlike a flat ring, whose receive-reduce-forward flows stream
// through a rank, a log step is phase after phase with a partner that changes
// from step to step; on shaped namespace links (200 Mbit/s and 1 Gbit/s per
// node, 8 nodes) recursive halving took 1.15-1.4x the ring's time at 1-16 MiB
// in 512 KiB phases and the ring's time in 64-128 KiB ones, while on shared
// memory 64 KiB phases cost 15% over 512 KiB (docs/benchmarks/scale.md). The
// hierarchical rings' carriers share their node's link (a stream each): on 4
// such nodes x 2 ranks a 64 MiB all-gather took 1.07-1.10x the link's time in
// 512 KiB phases and the link's time in 64 KiB ones, as hier_halving did.
// The links are the inter-node ones when `t` has several nodes; without a
// topology the slice is the chunk.
size_t linkPhaseBytes(const Topology* t, size_t chunkBytes);

// Slices of one step of a whole-message exchange (recursive doubling's
// rounds, the all-to-alls' pairwise steps) whose message is `elems` elements
// of `elemSize` bytes: phases of linkPhaseBytes, but not capped at the
// chunk (a message up to a millisecond of the link stays one phase), at most
// one per element, at least one. The same on every rank.
size_t exchangeSlices(const Topology* t, size_t elems, size_t elemSize);

// blocks[q].src: my contribution to block q; blocks[me].dst: where my block's
// result lands; blocks[q].dst for q != me: where this member may keep its
// partial sums of block q (may equal src when that is writable; invalid:
// scratch is reserved where needed). `finalize`: the last reduction of my
// block is the operation's final one.
void emitLogReduceScatter(Plan& plan, const Team& team, const std::vector<RingBlock>& blocks, size_t sliceBytes,
                          bool finalize);

// blocks[me].src: my data; blocks[q].dst: where block q lands on me.
void emitLogAllGather(Plan& plan, const Team& team, const std::vector<RingBlock>& blocks, size_t sliceBytes);

// Shared by the log-step and radix emitters (algo/radix_blocks.h):
// fails (strataInternalError, naming `emitter`) unless there is one block per
// member, owned by it, in one run;
void checkOneBlockPerMember(const Team& team, const std::vector<RingBlock>& blocks, const char* emitter);
// a reduce-scatter over a team of one is its block copied into place (and
// finalized): true when the team is one member and that was emitted;
bool emitLoneMemberReduceScatter(Plan& plan, const Team& team, const std::vector<RingBlock>& blocks, bool finalize);
// where each block's partial sum goes: its dst, or for the `reduced` blocks
// without one scratch reserved here (in block order, so that neighbouring
// partials stay one range).
std::vector<Ref> partialSumTargets(Plan& plan, const std::vector<RingBlock>& blocks, const std::vector<bool>& reduced);

// All-reduce of `elems` elements at `buf` (in place) over the team: a log-step
// reduce-scatter of team-size sub-blocks, then their log-step all-gather
// (Rabenseifner's algorithm for powers of two; for other sizes the Bruck
// patterns, so no member moves more than the minimal 2(t-1)/t of the data).
// `finalize`: the reduce-scatter's last reductions are the operation's final ones.
void emitLogAllReduceInPlace(Plan& plan, const Team& team, Ref buf, size_t elems, size_t sliceBytes, bool finalize);

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
