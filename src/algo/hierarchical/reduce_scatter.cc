// Hierarchical reduce-scatter: block b (rank b's result) belongs to column
// col(b) = b's local rank. Per pipeline slice, (1) a ring reduce-scatter inside
// each node leaves the node's partial sum of every block with the carrier of
// its column (in scratch), (2) each column's carriers run a ring
// reduce-scatter across nodes that ends each block at its rank. A node's link
// carries (N-1)/N of the data, the minimum.
#include "algo/algorithms.h"
#include "algo/compose.h"
#include "algo/hierarchical/teams.h"

namespace strata {

size_t hierBlockSlices(const Topology& t, size_t blockBytes, size_t chunkBytes) {
  (void)t;  // each inter-node step moves one block per column; the stages slice further
  return sliceCount(blockBytes, chunkBytes);
}

void buildHierRingReduceScatter(const CollArgs& a, Plan& plan) {
  const Topology& t = *a.topo;
  const size_t e = plan.elemSize, c = a.count, n = size_t(t.nranks());
  const int nodes = t.nnodes();
  const Team local = nodeTeam(t, a.rank);
  // Where I keep the node partials of the blocks I carry (nodes > 1).
  std::vector<Ref> slot(n);
  for (size_t b = 0; b < n; ++b)
    if (nodes > 1 && t.place(int(b)).local % local.size() == local.me) slot[b] = reserveScratch(plan, c * e);
  const size_t slices = hierBlockSlices(t, c * e, a.chunkBytes);
  for (size_t s = 0; s < slices; ++s) {
    const size_t begin = blockBegin(c, int(slices), int(s));
    const size_t len = blockBegin(c, int(slices), int(s) + 1) - begin;
    auto shift = [&](Ref r) { return plus(r, begin * e); };
    std::vector<RingBlock> blocks;
    for (size_t b = 0; b < n; ++b) {
      RingBlock rb;
      rb.owner = t.place(int(b)).local % local.size();
      rb.src = at(Buf::kSend, (b * c + begin) * e);
      rb.dst = nodes == 1 ? at(Buf::kRecv, begin * e) : (slot[b].valid() ? shift(slot[b]) : Ref{});
      rb.elems = len;
      blocks.push_back(rb);
    }
    emitRingReduceScatter(plan, local, blocks, a.chunkBytes, nodes == 1);
    if (nodes == 1) continue;
    for (int j : carriedColumns(t, a.rank)) {
      std::vector<RingBlock> col;
      for (size_t b = 0; b < n; ++b) {
        if (t.place(int(b)).local != j) continue;
        RingBlock rb;
        rb.owner = t.nodeOf(int(b));
        rb.src = shift(slot[b]);
        rb.dst = at(Buf::kRecv, begin * e);
        rb.elems = len;
        col.push_back(rb);
      }
      emitRingReduceScatter(plan, columnTeam(t, j, a.rank), col, a.chunkBytes, true);
    }
  }
}

}  // namespace strata
