// Ring reduce-scatter and all-gather over any team of ranks and any set of
// blocks, the building blocks of the hierarchical algorithms. A team is an
// ordered list of global ranks; block b travels around the ring once: for a
// reduce-scatter it starts at the member after its owner and ends, fully
// reduced, at the owner; for an all-gather it starts at its holder and
// reaches every other member. A member may own several blocks or none, so
// teams of unequal nodes work. Blocks are cut into pipeline slices; phase k of
// a slice holds this member's k-th step of every block.
#pragma once

#include <vector>

#include "algo/plan.h"
#include "topo/topology.h"

namespace strata {

// One block, as this rank sees it (offsets are this rank's own). A block may
// be `runs` equal runs of elements spaced by a stride (a hierarchical
// algorithm's column: the blocks of one local index on every node, which a
// rank-major buffer holds `ranks per node` blocks apart); it travels as one.
struct RingBlock {
  int owner = 0;    // team index: the member that ends with the block (reduce-scatter) or holds it (all-gather)
  Ref src;          // reduce-scatter: my contribution; all-gather: the holder's data
  Ref dst;          // where the block's final value lands on me (on the owner, for reduce-scatter)
  size_t elems = 0;  // in all runs together (a multiple of runs)
  size_t runs = 1;
  size_t srcStride = 0, dstStride = 0;  // bytes from one run's start to the next's
};

struct Team {
  std::vector<int> members;  // global ranks, in ring order
  int me = 0;                // my index in members
  int size() const { return int(members.size()); }
};

// The slice of a ring inside a node (the stage there of the hierarchical
// algorithms): the pipeline chunk, or longer where the node's link would move
// a chunk in less than a few of its latencies (NVLink class: 2 us and 450
// GB/s move 512 KiB in 1.2 us, so every phase would cost mostly latency), up
// to half of what a link buffers (Topology::linkBufferBytes; unknown: the
// chunk). The same on every rank; the cost model uses it too.
size_t nodeRingSliceBytes(const Topology& t, size_t chunkBytes);

// `finalize` marks the owner's last reduction as the operation's final one.
void emitRingReduceScatter(Plan& plan, const Team& team, const std::vector<RingBlock>& blocks,
                           size_t chunkBytes, bool finalize);
void emitRingAllGather(Plan& plan, const Team& team, const std::vector<RingBlock>& blocks,
                       size_t chunkBytes);
// All-reduce of `elems` elements at `buf` (in place) over the team: a
// reduce-scatter of team-size sub-blocks followed by their all-gather.
void emitRingAllReduceInPlace(Plan& plan, const Team& team, Ref buf, size_t elems, size_t chunkBytes,
                              bool finalize);

inline bool sameRef(const Ref& a, const Ref& b) { return a.buf == b.buf && a.offset == b.offset; }
// Whether a block's source and destination are the same memory.
inline bool sameRegion(const RingBlock& b) {
  return sameRef(b.src, b.dst) && (b.runs <= 1 || b.srcStride == b.dstStride);
}

// Adds to the current phase the flows that move elements [begin, end) of a
// block (counted across its runs, run after run): `proto`'s kind, peers and
// flags, with its src / dst (each used only when valid in `proto`) set to the
// block's. At most three flows: the rest of a run, whole runs (one strided
// flow), the start of a run.
void addBlockRange(Plan& plan, const Flow& proto, const RingBlock& block, size_t begin, size_t end);

// One piece of a message: `bytes` from src to dst (either may be invalid when
// the flow kind does not use it).
struct Piece {
  Ref src, dst;
  size_t bytes = 0;
};
// Adds to the current phase the flows that move `pieces` in order, as
// `proto` does one: consecutive pieces that continue each other in memory
// become one flow, and pieces of one size spaced evenly one strided flow, so
// a message assembled from many blocks costs a few flows. Empty pieces are
// skipped; when all are, one empty flow still carries the descriptor.
void addPieces(Plan& plan, const Flow& proto, const std::vector<Piece>& pieces);

}  // namespace strata
