// Hierarchical all-reduce.
//  - ring (bandwidth): per pipeline slice, (1) a ring reduce-scatter inside
//    each node leaves part j of the node's sum with column j's carrier,
//    (2) each carrier runs a ring all-reduce of its part with the carriers of
//    the same part on the other nodes, all columns at once, (3) a ring
//    all-gather inside each node. A node's link carries 2(N-1)/N of the data,
//    the minimum, split over as many streams as the node has ranks.
//  - halving (bandwidth, many nodes): the same, with step (2) a log-step
//    all-reduce (algo/log_blocks.h: recursive halving then doubling, or the
//    Bruck patterns for node counts that are not powers of two): 2 ceil(log2 N)
//    inter-node steps instead of 2(N-1), the same minimal bytes. Where the
//    parts are so small that the steps' latency is the time (the cost
//    model's call: hierHalvingAllReduceForm), recursive doubling of each
//    whole part instead: floor(log2 N) steps (two more off powers of two);
//    and where even that pays each step's extra message per carrier (the
//    network's per-message gap, a node's messages queued on one link), one
//    part carried by local rank 0 of each node: its steps are hier_leader's,
//    with the node's phases a ring of one block.
//  - leader (latency): a binomial-tree reduce to one leader per node,
//    recursive doubling among the leaders, a binomial-tree broadcast back.
#include "algo/algorithms.h"
#include "algo/compose.h"
#include "algo/cost_model.h"
#include "algo/hierarchical/teams.h"
#include "algo/log_blocks.h"

namespace strata {

size_t hierOuterSlices(const Topology& t, size_t maxPartBytes, size_t chunkBytes, int columns) {
  return sliceCount(maxPartBytes * size_t(maxCarried(t, columns)) / size_t(t.nnodes()), chunkBytes);
}

namespace {

// One carried part's all-reduce across nodes (in place, finalized).
using ColumnAllReduce = void (*)(Plan&, const Team&, Ref, size_t elems, const CollArgs&);

// Across nodes a ring's phases are linkPhaseBytes long, as a log step's are:
// every carrier of a node streams on its link at once (see log_blocks.h).
void ringAllReduceAcross(Plan& plan, const Team& team, Ref buf, size_t elems, const CollArgs& a) {
  emitRingAllReduceInPlace(plan, team, buf, elems, linkPhaseBytes(a.topo, a.chunkBytes), true);
}

void logAllReduceAcross(Plan& plan, const Team& team, Ref buf, size_t elems, const CollArgs& a) {
  emitLogAllReduceInPlace(plan, team, buf, elems, linkPhaseBytes(a.topo, a.chunkBytes), true);
}

// Short parts: recursive doubling of the whole part (all_reduce/
// recursive_doubling.cc), in place. Every carrier of a column computes the
// same `elems`, so an empty part is skipped by all of them.
void doublingAllReduceAcross(Plan& plan, const Team& team, Ref buf, size_t elems, const CollArgs& a) {
  if (elems == 0) return;
  CollArgs sub = a;
  sub.count = elems;
  appendStage(plan, buildRecursiveDoublingAllReduce, team, sub, Rebind{buf, buf, true});
}

// Intra-node reduce-scatter into `k` parts (K, or fewer), `column` across
// nodes on each carried part, intra-node all-gather.
void buildHierTwoLevelAllReduce(const CollArgs& a, Plan& plan, ColumnAllReduce column, int k) {
  const Topology& t = *a.topo;
  const size_t e = plan.elemSize;
  const int nodes = t.nnodes();
  const Team local = nodeTeam(t, a.rank);
  const std::vector<int> mine = carriedColumns(t, a.rank, k);
  // Outer slices (the same on every node) keep each inter-node ring step
  // within one pipeline chunk; more would only add per-step latency, since a
  // rank runs the stages of a slice one after another. The stages slice
  // their own blocks further where needed.
  const size_t maxPart = (a.count / size_t(k) + 1) * e;
  const size_t slices = hierOuterSlices(t, maxPart, a.chunkBytes, k);
  for (size_t s = 0; s < slices; ++s) {
    // Slice s of every part: part j's elements [begin, begin + len).
    std::vector<RingBlock> parts;
    for (int j = 0; j < k; ++j) {
      size_t pb = blockBegin(a.count, k, j), pl = blockBegin(a.count, k, j + 1) - pb;
      size_t begin = pb + blockBegin(pl, int(slices), int(s));
      size_t len = blockBegin(pl, int(slices), int(s) + 1) - blockBegin(pl, int(slices), int(s));
      RingBlock b;
      b.owner = j % local.size();
      b.src = at(Buf::kSend, begin * e);
      b.dst = at(Buf::kRecv, begin * e);
      b.elems = len;
      parts.push_back(b);
    }
    emitRingReduceScatter(plan, local, parts, nodeRingSliceBytes(t, a.chunkBytes), nodes == 1);
    if (nodes > 1)
      for (int j : mine)
        column(plan, columnTeam(t, j, a.rank), parts[size_t(j)].dst, parts[size_t(j)].elems, a);
    for (RingBlock& b : parts) b.src = b.dst;
    emitRingAllGather(plan, local, parts, nodeRingSliceBytes(t, a.chunkBytes));
  }
}

}  // namespace

void buildHierRingAllReduce(const CollArgs& a, Plan& plan) {
  buildHierTwoLevelAllReduce(a, plan, ringAllReduceAcross, a.topo->maxLocal());
}

void buildHierHalvingAllReduce(const CollArgs& a, Plan& plan) {
  const HierHalvingAllReduceForm form = hierHalvingAllReduceForm(a.count * plan.elemSize, *a.topo, a.chunkBytes);
  if (a.topo->nnodes() > 1)
    plan.shape = !form.doubles         ? "halving then doubling across nodes"
                 : form.columns == 1 ? "recursive doubling of the node's sum by one rank per node across nodes"
                                       : "recursive doubling of whole parts across nodes";
  buildHierTwoLevelAllReduce(a, plan, form.doubles ? doublingAllReduceAcross : logAllReduceAcross, form.columns);
}

void buildHierLeaderAllReduce(const CollArgs& a, Plan& plan) {
  const Topology& t = *a.topo;
  const size_t bytes = a.count * plan.elemSize;
  const int nodes = t.nnodes();
  const Team local = nodeTeam(t, a.rank);
  const bool leader = local.me == 0;
  CollArgs sub = a;
  sub.root = 0;
  // The node's sum lands on the leader: in recvbuff when it is final already
  // (one node), else in scratch as the leaders' input.
  Ref nodeSum = at(Buf::kSend, 0);
  if (local.size() > 1) {
    if (leader && nodes > 1) nodeSum = reserveScratch(plan, bytes);
    if (leader && nodes == 1) nodeSum = at(Buf::kRecv, 0);
    appendStage(plan, buildTreeReduce, local, sub, Rebind{at(Buf::kSend, 0), nodeSum, nodes == 1});
  }
  if (nodes > 1 && leader)
    appendStage(plan, buildRecursiveDoublingAllReduce, leaderTeam(t, t.node(0)[0], a.rank), sub,
                Rebind{nodeSum, at(Buf::kRecv, 0), true});
  if (local.size() > 1)
    appendStage(plan, buildTreeBroadcast, local, sub, Rebind{at(Buf::kRecv, 0), at(Buf::kRecv, 0), false});
}

}  // namespace strata
