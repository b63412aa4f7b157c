// Hierarchical all-gather, the mirror of the hierarchical reduce-scatter:
// per pipeline slice, (1) each column's carriers run a ring all-gather across
// nodes of the blocks of that column (block b = rank b's data, column = b's
// local rank), (2) a ring all-gather inside each node spreads every block from
// its carrier to the node's other ranks.
#include "algo/algorithms.h"
#include "algo/compose.h"
#include "algo/hierarchical/teams.h"

namespace strata {

void buildHierRingAllGather(const CollArgs& a, Plan& plan) {
  const Topology& t = *a.topo;
  const size_t e = plan.elemSize, c = a.count, n = size_t(t.nranks());
  const int nodes = t.nnodes();
  const Team local = nodeTeam(t, a.rank);
  const size_t slices = hierBlockSlices(t, c * e, a.chunkBytes);
  for (size_t s = 0; s < slices; ++s) {
    const size_t begin = blockBegin(c, int(slices), int(s));
    const size_t len = blockBegin(c, int(slices), int(s) + 1) - begin;
    auto dstOf = [&](size_t b) { return at(Buf::kRecv, (b * c + begin) * e); };
    const Ref mine = at(Buf::kSend, begin * e);
    if (nodes > 1) {
      for (int j : carriedColumns(t, a.rank)) {
        std::vector<RingBlock> col;
        for (size_t b = 0; b < n; ++b) {
          if (t.place(int(b)).local != j) continue;
          RingBlock rb;
          rb.owner = t.nodeOf(int(b));
          rb.src = int(b) == a.rank ? mine : dstOf(b);
          rb.dst = dstOf(b);
          rb.elems = len;
          col.push_back(rb);
        }
        emitRingAllGather(plan, columnTeam(t, j, a.rank), col, a.chunkBytes);
      }
    }
    std::vector<RingBlock> blocks;
    for (size_t b = 0; b < n; ++b) {
      RingBlock rb;
      rb.owner = t.place(int(b)).local % local.size();
      rb.src = (nodes == 1 && int(b) == a.rank) ? mine : dstOf(b);
      rb.dst = dstOf(b);
      rb.elems = len;
      blocks.push_back(rb);
    }
    emitRingAllGather(plan, local, blocks, a.chunkBytes);
  }
}

}  // namespace strata
