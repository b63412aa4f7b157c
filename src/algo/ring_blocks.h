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

namespace strata {

// One block, as this rank sees it (offsets are this rank's own).
struct RingBlock {
  int owner = 0;    // team index: the member that ends with the block (reduce-scatter) or holds it (all-gather)
  Ref src;          // reduce-scatter: my contribution; all-gather: the holder's data
  Ref dst;          // where the block's final value lands on me (on the owner, for reduce-scatter)
  size_t elems = 0;
};

struct Team {
  std::vector<int> members;  // global ranks, in ring order
  int me = 0;                // my index in members
  int size() const { return int(members.size()); }
};

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

}  // namespace strata
