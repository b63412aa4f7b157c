// Hierarchical reduce-scatter: block b (rank b's result) belongs to column
// col(b) = b's local rank. Per pipeline slice, (1) a ring reduce-scatter
// inside each node leaves the node's partial sums of each column's blocks
// with the column's carrier (in scratch, in node order); a column moves as
// one block of evenly spaced runs (teams.h: columnRuns), so the ring takes
// ranks-per-node - 1 steps however many nodes there are; (2) each column's
// carriers run a reduce-scatter across nodes that ends each block at its
// rank: a ring (hier_ring, N-1 steps), log-step (hier_halving, ceil(log2 N)
// steps: algo/log_blocks.h) or radix-k (hier_radix, ceil(log_k N) steps of
// k-1 partners at once: algo/radix_blocks.h). A node's link carries (N-1)/N of
// the data, the minimum, every way. Where the nodes are equal and the cost
// model says it pays (stagesSideBySidePay), (1) runs beside (2) instead of
// before it: the node's ranks send each carrier their contributions as (2)
// first reads them (node_fanin.h).
#include "algo/algorithms.h"
#include "algo/compose.h"
#include "algo/cost_model.h"
#include "algo/hierarchical/node_fanin.h"
#include "algo/hierarchical/node_fanout.h"
#include "algo/hierarchical/teams.h"
#include "algo/log_blocks.h"
#include "algo/radix_blocks.h"

namespace strata {

size_t hierBlockSlices(const Topology& t, size_t blockBytes, size_t chunkBytes) {
  (void)t;  // each inter-node step moves one block per column; the stages slice further
  return sliceCount(blockBytes, chunkBytes);
}

namespace {

// The inter-node stage over one column's team: one block per node (empty
// where a node has no rank of that local index).
// (`slice`: a phase's bytes on a link, linkPhaseBytes; `radix`: hier_radix's, hierRadixFor.)
using ColumnReduceScatter = void (*)(Plan&, const Team&, const std::vector<RingBlock>&, size_t slice, int radix);

// Across nodes a ring's phases are linkPhaseBytes long, as a log step's are:
// every carrier of a node streams on its link at once (see log_blocks.h).
void ringAcrossNodes(Plan& plan, const Team& team, const std::vector<RingBlock>& blocks, size_t slice, int) {
  emitRingReduceScatter(plan, team, blocks, slice, true);
}

void logAcrossNodes(Plan& plan, const Team& team, const std::vector<RingBlock>& blocks, size_t slice, int) {
  emitLogReduceScatter(plan, team, blocks, slice, true);
}

void radixAcrossNodes(Plan& plan, const Team& team, const std::vector<RingBlock>& blocks, size_t slice,
                      int radix) {
  emitRadixReduceScatter(plan, team, blocks, slice, true, radix);
}

void buildHierReduceScatter(const CollArgs& a, Plan& plan, const char* name, ColumnReduceScatter across) {
  const Topology& t = *a.topo;
  const size_t e = plan.elemSize, c = a.count;
  const size_t bytes = collectiveBytes(Coll::kReduceScatter, c, e, a.nranks);
  const HierShape shape = hierShapeFor(name, Coll::kReduceScatter, bytes, t, a.chunkBytes);
  const bool sideBySide = shape.sideBySide;
  const int radix = shape.radix;
  plan.shape = describeHierShape(shape, t);
  const size_t slice = linkPhaseBytes(a.topo, a.chunkBytes);
  const int nodes = t.nnodes();
  const Team local = nodeTeam(t, a.rank);
  const std::vector<ColumnRun> runs = columnRuns(t);
  // Where I keep my node's partial sums of the columns I carry (nodes > 1):
  // each column's blocks in node order.
  std::vector<Ref> columnSum(size_t(t.maxLocal()));
  if (nodes > 1)
    for (int j : carriedColumns(t, a.rank))
      columnSum[size_t(j)] = reserveScratch(plan, columnRanks(t, j).size() * c * e);
  const size_t slices = hierBlockSlices(t, c * e, a.chunkBytes);
  // Column j's blocks as `carrier` (its carrier on this rank's node) sees
  // them, in its partial sums `sums`: its own block's result lands in its
  // receive buffer.
  auto columnBlocks = [&](int j, int carrier, Ref sums, size_t begin, size_t len) {
    std::vector<RingBlock> column(static_cast<size_t>(nodes));
    size_t index = 0;  // of the next block in the column
    for (int m = 0; m < nodes; ++m) {
      RingBlock& b = column[size_t(m)];
      const bool has = int(t.node(m).size()) > j;
      b.owner = m;
      b.src = b.dst = plus(sums, (index * c + begin) * e);
      b.elems = has ? len : 0;
      if (has && t.node(m)[size_t(j)] == carrier) b.dst = at(Buf::kRecv, begin * e);
      index += has ? 1 : 0;
    }
    return column;
  };
  for (size_t s = 0; s < slices; ++s) {
    const size_t begin = blockBegin(c, int(slices), int(s));
    const size_t len = blockBegin(c, int(slices), int(s) + 1) - begin;
    if (sideBySide) {  // both stages at once (node_fanin.h)
      std::vector<NodeColumnSums> columns(local.members.size());
      for (size_t j = 0; j < columns.size(); ++j) {
        NodeColumnSums& col = columns[j];
        col.carrier = local.members[j];
        col.sums = int(j) == local.me ? columnSum[j] : at(Buf::kScratch, 0);  // others': only where, within them
        col.blockBytes = c * e;
        for (int r : columnRanks(t, int(j))) col.sendOffset.push_back(size_t(r) * c * e);
        col.across = columnStagePlan(plan);
        across(col.across, columnTeam(t, int(j), col.carrier),
               columnBlocks(int(j), col.carrier, col.sums, begin, len), slice, radix);
      }
      emitFannedInColumns(plan, local, columns);
      continue;
    }
    std::vector<RingBlock> blocks;
    for (const ColumnRun& r : runs) {
      RingBlock b;
      b.owner = r.column % local.size();
      b.src = at(Buf::kSend, (size_t(r.rank0) * c + begin) * e);
      b.srcStride = size_t(r.rankStride) * c * e;
      b.dstStride = c * e;
      b.runs = r.count;
      b.elems = r.count * len;
      if (nodes == 1) b.dst = at(Buf::kRecv, begin * e);
      else if (b.owner == local.me) b.dst = plus(columnSum[size_t(r.column)], (r.first * c + begin) * e);
      blocks.push_back(b);
    }
    emitRingReduceScatter(plan, local, blocks, nodeRingSliceBytes(t, a.chunkBytes), nodes == 1);
    if (nodes == 1) continue;
    for (int j : carriedColumns(t, a.rank))
      across(plan, columnTeam(t, j, a.rank), columnBlocks(j, a.rank, columnSum[size_t(j)], begin, len), slice, radix);
  }
}

}  // namespace

void buildHierRingReduceScatter(const CollArgs& a, Plan& plan) {
  buildHierReduceScatter(a, plan, "hier_ring", ringAcrossNodes);
}

void buildHierHalvingReduceScatter(const CollArgs& a, Plan& plan) {
  buildHierReduceScatter(a, plan, "hier_halving", logAcrossNodes);
}

void buildHierRadixReduceScatter(const CollArgs& a, Plan& plan) {
  buildHierReduceScatter(a, plan, "hier_radix", radixAcrossNodes);
}

}  // namespace strata
