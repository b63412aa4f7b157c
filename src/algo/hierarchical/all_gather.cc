// Hierarchical all-gather, the mirror of the hierarchical reduce-scatter:
// per pipeline slice, (1) each column's carriers run an all-gather across
// nodes of the blocks of that column (block b = rank b's data, column = b's
// local rank): a ring (hier_ring), log-step (hier_halving: recursive
// doubling, or Bruck's for node counts that are not powers of two) or radix-k
// (hier_radix: k-1 partners a step, algo/radix_blocks.h), (2) every column
// spreads from its carrier to the node's other ranks: where the nodes are
// equal and the cost model says it pays (stagesSideBySidePay), beside (1),
// each block going on a phase after it arrived (node_fanout.h); elsewhere
// after it, by a ring all-gather inside each node, a column moving as one
// block of evenly spaced runs.
#include "algo/algorithms.h"
#include "algo/compose.h"
#include "algo/cost_model.h"
#include "algo/hierarchical/node_fanout.h"
#include "algo/hierarchical/teams.h"
#include "algo/log_blocks.h"
#include "algo/radix_blocks.h"

namespace strata {

namespace {

// (`slice`: a phase's bytes on a link, linkPhaseBytes; `radix`: hier_radix's, hierRadixFor.)
using ColumnAllGather = void (*)(Plan&, const Team&, const std::vector<RingBlock>&, size_t slice, int radix);

// Across nodes a ring's phases are linkPhaseBytes long, as a log step's are:
// every carrier of a node streams on its link at once (see log_blocks.h).
void ringAcrossNodes(Plan& plan, const Team& team, const std::vector<RingBlock>& blocks, size_t slice, int) {
  emitRingAllGather(plan, team, blocks, slice);
}

void logAcrossNodes(Plan& plan, const Team& team, const std::vector<RingBlock>& blocks, size_t slice, int) {
  emitLogAllGather(plan, team, blocks, slice);
}

void radixAcrossNodes(Plan& plan, const Team& team, const std::vector<RingBlock>& blocks, size_t slice,
                      int radix) {
  emitRadixAllGather(plan, team, blocks, slice, radix);
}

void buildHierAllGather(const CollArgs& a, Plan& plan, const char* name, ColumnAllGather across) {
  const Topology& t = *a.topo;
  const size_t e = plan.elemSize, c = a.count;
  const size_t bytes = collectiveBytes(Coll::kAllGather, c, e, a.nranks);
  const HierShape shape = hierShapeFor(name, Coll::kAllGather, bytes, t, a.chunkBytes);
  const bool sideBySide = shape.sideBySide;
  const int radix = shape.radix;
  plan.shape = describeHierShape(shape, t);
  const size_t slice = linkPhaseBytes(a.topo, a.chunkBytes);
  const int nodes = t.nnodes();
  const Team local = nodeTeam(t, a.rank);
  const std::vector<ColumnRun> runs = columnRuns(t);
  const size_t slices = hierBlockSlices(t, c * e, a.chunkBytes);
  for (size_t s = 0; s < slices; ++s) {
    const size_t begin = blockBegin(c, int(slices), int(s));
    const size_t len = blockBegin(c, int(slices), int(s) + 1) - begin;
    auto dstOf = [&](size_t b) { return at(Buf::kRecv, (b * c + begin) * e); };
    const Ref mine = at(Buf::kSend, begin * e);
    // Column j's blocks as `carrier` (its carrier on this rank's node) sees them.
    auto columnBlocks = [&](int j, int carrier) {
      std::vector<RingBlock> column(static_cast<size_t>(nodes));
      for (int m = 0; m < nodes; ++m) {
        RingBlock& b = column[size_t(m)];
        const bool has = int(t.node(m).size()) > j;
        const size_t rank = size_t(has ? t.node(m)[size_t(j)] : t.node(m)[0]);
        b.owner = m;
        b.dst = dstOf(rank);
        b.src = int(rank) == carrier && has ? mine : b.dst;
        b.elems = has ? len : 0;
      }
      return column;
    };
    if (sideBySide) {  // both stages at once (node_fanout.h)
      std::vector<NodeColumn> columns(local.members.size());
      for (size_t j = 0; j < columns.size(); ++j) {
        NodeColumn& c = columns[j];
        c.carrier = local.members[j];
        c.ownBlock = dstOf(size_t(c.carrier));
        c.across = columnStagePlan(plan);
        across(c.across, columnTeam(t, int(j), c.carrier), columnBlocks(int(j), c.carrier), slice, radix);
      }
      emitFannedOutColumns(plan, local, columns, mine, len * e);
      continue;
    }
    if (nodes > 1)
      for (int j : carriedColumns(t, a.rank))
        across(plan, columnTeam(t, j, a.rank), columnBlocks(j, a.rank), slice, radix);
    std::vector<RingBlock> blocks;
    for (const ColumnRun& r : runs) {
      RingBlock b;
      b.owner = r.column % local.size();
      b.src = b.dst = dstOf(size_t(r.rank0));
      b.srcStride = b.dstStride = size_t(r.rankStride) * c * e;
      b.runs = r.count;
      b.elems = r.count * len;
      if (nodes == 1 && r.rank0 == a.rank) b.src = mine;
      blocks.push_back(b);
    }
    emitRingAllGather(plan, local, blocks, nodeRingSliceBytes(t, a.chunkBytes));
  }
}

}  // namespace

void buildHierRingAllGather(const CollArgs& a, Plan& plan) {
  buildHierAllGather(a, plan, "hier_ring", ringAcrossNodes);
}

void buildHierHalvingAllGather(const CollArgs& a, Plan& plan) {
  buildHierAllGather(a, plan, "hier_halving", logAcrossNodes);
}

void buildHierRadixAllGather(const CollArgs& a, Plan& plan) {
  buildHierAllGather(a, plan, "hier_radix", radixAcrossNodes);
}

}  // namespace strata
