// The hierarchical reduce-scatter and all-gather on equal nodes, where the
// stage inside each node runs beside the exchange across nodes: the plans'
// shape (node_fanout.h, node_fanin.h: trailing flows, tapered sends, bytes
// from the node) and where that form is taken (stagesSideBySidePay). Their
// results are checked by hier_plan_test.cc's in-memory runs.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "algo/cost_model.h"
#include "algo/hierarchical/node_fanout.h"
#include "algo/select.h"
#include "support/clusters.h"
#include "topo/topology.h"

namespace strata {
namespace {

using test::cluster;

// Every rank's plan of `coll` forced to each hierarchical algorithm on
// equal nodes (`layouts`: nodes x ranks a node), kEqualNodeCount floats, on links that
// make the stage inside the nodes as long as the exchange across them (so
// that running them side by side pays); `check` gets the topology, the rank,
// its plan and a label for failures.
constexpr size_t kEqualNodeCount = 65537;
template <typename Check>
void forEachEqualNodePlan(Coll coll, std::initializer_list<std::pair<int, int>> layouts, Check check) {
  for (const char* algo : {"hier_ring", "hier_halving", "hier_radix"})
    for (const auto& [nodes, per] : layouts) {
      Topology t = cluster(nodes, per);
      t.intra = LinkParams{2, 0.5, "test"};
      t.inter = LinkParams{15, 1, "test"};
      CollArgs a;
      a.coll = coll;
      a.nranks = t.nranks();
      a.count = kEqualNodeCount;
      a.topo = &t;
      ASSERT_TRUE(stagesSideBySidePay(algo, coll, collectiveBytes(coll, a.count, 4, a.nranks), t, a.chunkBytes))
          << algo << " " << nodes << "x" << per;
      Config cfg;
      cfg.algo = algo;
      for (a.rank = 0; a.rank < a.nranks; ++a.rank)
        check(t, a.rank, buildCollectivePlan(a, OpDesc{}, cfg),
              std::string(algo) + " " + std::to_string(nodes) + "x" + std::to_string(per) + " rank " +
                  std::to_string(a.rank));
    }
}

// Whether flow `f` of `rank` talks to another node (as its peer or forward peer).
bool crossesNodes(const Topology& t, int rank, const Flow& f) {
  for (int other : {f.kind == FlowKind::kCopy ? -1 : f.peer, f.forwardPeer})
    if (other >= 0 && t.nodeOf(other) != t.nodeOf(rank)) return true;
  return false;
}

// On equal nodes the hierarchical all-gathers spread each column inside its
// node beside the exchange across nodes (node_fanout.h): no phase is left
// that only talks inside the node, every block a carrier receives goes on to
// each other rank of its node in the same phase (a Send trailing the
// receive), and the others receive it there from that carrier. Uneven nodes
// keep the ring inside the node after the exchange.
TEST(HierPlans, AllGatherFansOutInsideEqualNodes) {
  forEachEqualNodePlan(Coll::kAllGather, {{2, 2}, {3, 4}, {5, 3}, {9, 2}},
                       [](const Topology& t, int rank, const Plan& p, const std::string& where) {
    size_t trailing = 0, fromNode = 0, tapered = 0;
    bool forwarded = false;
    for (const Phase& ph : p.phases) {
      bool across = false;
      std::set<int> partners;  // the phase's peers across nodes it sends to
      for (uint32_t i = ph.first; i < ph.first + ph.count; ++i) {
        const Flow& f = p.flows[i];
        if (f.kind != FlowKind::kRecv && crossesNodes(t, rank, f))
          partners.insert(f.kind == FlowKind::kSend ? f.peer : f.forwardPeer);
      }
      for (uint32_t i = ph.first; i < ph.first + ph.count; ++i) {
        const Flow& f = p.flows[i];
        across |= crossesNodes(t, rank, f);
        if (f.trails >= 0) {
          ++trailing;
          const Flow& filler = p.flows[ph.first + uint32_t(f.trails)];
          EXPECT_EQ(filler.kind, FlowKind::kRecv) << where;
          EXPECT_NE(t.nodeOf(filler.peer), t.nodeOf(rank)) << where;
          EXPECT_EQ(t.nodeOf(f.peer), t.nodeOf(rank)) << where;
          EXPECT_EQ(f.src.offset, filler.dst.offset) << where;
          EXPECT_EQ(f.bytes, filler.bytes) << where;
        }
        if (f.kind == FlowKind::kRecv && t.nodeOf(f.peer) == t.nodeOf(rank)) fromNode += f.bytes;
        // Only sends across nodes are tapered (Sends, or the Copy that puts
        // a carrier's own block in place and sends it), and only where the
        // receivers only land them (a ring's on 3 nodes or more, and a log
        // step's on some node counts, forward what they receive); the more
        // partners the phase sends to, the smaller their last packets.
        if (f.taperTo) {
          ++tapered;
          EXPECT_TRUE(f.kind != FlowKind::kRecv && crossesNodes(t, rank, f)) << where;
          EXPECT_EQ(f.taperTo, tailFragmentFor(partners.size())) << where;
        }
        forwarded |= f.kind == FlowKind::kRecv && f.forwardPeer >= 0;
      }
      EXPECT_TRUE(across) << where << ": a phase only inside the node";
    }
    EXPECT_GT(trailing, 0u) << where;
    if (forwarded) EXPECT_EQ(tapered, 0u) << where;
    if (where.rfind("hier_ring", 0) == 0 && t.nnodes() > 2) EXPECT_TRUE(forwarded) << where;
    const bool powerOfTwo = (t.nnodes() & (t.nnodes() - 1)) == 0;
    if (where.rfind("hier_radix", 0) == 0 || (where.rfind("hier_halving", 0) == 0 && powerOfTwo))
      EXPECT_GT(tapered, 0u) << where;
    // The node's other columns: (per - 1) of the per columns, every node's block of each.
    EXPECT_EQ(fromNode, size_t(t.nnodes()) * size_t(t.maxLocal() - 1) * kEqualNodeCount * 4) << where;
  });
  Topology uneven = Topology::fromNodeIds({0, 0, 0, 1, 1});
  EXPECT_FALSE(stagesSideBySide(uneven));
  EXPECT_FALSE(stagesSideBySide(cluster(1, 4)));
  EXPECT_FALSE(stagesSideBySide(cluster(4, 1)));
  CollArgs a;
  a.coll = Coll::kAllGather;
  a.nranks = uneven.nranks();
  a.count = 1009;
  a.topo = &uneven;
  Config cfg;
  cfg.algo = "hier_radix";
  for (a.rank = 0; a.rank < a.nranks; ++a.rank)
    for (const Flow& f : buildCollectivePlan(a, OpDesc{}, cfg).flows) EXPECT_LT(f.trails, 0);
}

// The side-by-side form runs only where the model puts it more than 1%
// ahead (stagesSideBySidePay): not for a few bytes, where both forms take the
// same latencies, but for a large all-gather or reduce-scatter on fast nodes.
TEST(HierPlans, StagesRunSideBySideOnlyWhereItPays) {
  Topology t = cluster(4, 2);  // (with 8 a node, the fan-out beats a ring of 7 hops at any size)
  t.intra = LinkParams{2, 450, "test"};
  t.inter = LinkParams{15, 50, "test"};
  t.memoryGbps = 2000;  // (a fan-in's carrier sums L-1 contributions to a fragment before it goes on)
  for (Coll coll : {Coll::kReduceScatter, Coll::kAllGather})
    for (const char* algo : {"hier_halving", "hier_radix"})
      for (size_t count : {size_t(2), size_t(1) << 21}) {
        CollArgs a;
        a.coll = coll;
        a.nranks = t.nranks();
        a.count = count;
        a.topo = &t;
        Config cfg;
        cfg.algo = algo;
        size_t trailing = 0;
        for (a.rank = 0; a.rank < a.nranks; ++a.rank)
          for (const Flow& f : buildCollectivePlan(a, OpDesc{}, cfg).flows) trailing += f.trails >= 0;
        const bool pays = stagesSideBySidePay(algo, coll, collectiveBytes(coll, count, 4, a.nranks), t, a.chunkBytes);
        EXPECT_EQ(pays, count > 2) << collName(coll) << " " << algo << " count " << count;
        EXPECT_EQ(trailing > 0, pays) << collName(coll) << " " << algo << " count " << count;
      }
}

// The reduce-scatter's mirror (node_fanin.h): on equal nodes no phase only
// inside the node; a carrier receives from each other rank of its node that
// rank's contributions to every block of its column once (the chain of
// reducing Recvs, each trailing the one before on the same bytes), and what
// reads the sums across nodes first trails the chain's last Recv.
TEST(HierPlans, ReduceScatterFansInInsideEqualNodes) {
  forEachEqualNodePlan(Coll::kReduceScatter, {{2, 2}, {3, 4}, {5, 3}, {7, 2}},
                       [](const Topology& t, int rank, const Plan& p, const std::string& where) {
    size_t fromNode = 0, sentToNode = 0, readingsTrailed = 0;
    for (const Phase& ph : p.phases) {
      bool across = false;
      for (uint32_t i = ph.first; i < ph.first + ph.count; ++i) {
        const Flow& f = p.flows[i];
        across |= crossesNodes(t, rank, f);
        EXPECT_EQ(f.taperTo, 0u) << where;  // (the all-gather's fan-out only)
        // The contributions to the node's carriers ramp up (their sums go
        // on as they land), and nothing else does.
        const bool contribution = f.kind == FlowKind::kSend && t.nodeOf(f.peer) == t.nodeOf(rank);
        EXPECT_EQ(f.rampsUp, contribution) << where;
        sentToNode += contribution ? f.bytes : 0;
        const bool inNode = f.kind == FlowKind::kRecv && t.nodeOf(f.peer) == t.nodeOf(rank);
        if (inNode) {
          fromNode += f.bytes;
          EXPECT_TRUE(f.reduce) << where;
        }
        if (f.trails < 0) continue;
        const Flow& leader = p.flows[ph.first + uint32_t(f.trails)];
        EXPECT_EQ(leader.kind, FlowKind::kRecv) << where;
        EXPECT_EQ(t.nodeOf(leader.peer), t.nodeOf(rank)) << where;
        EXPECT_EQ(f.src.offset, leader.dst.offset) << where;
        EXPECT_EQ(f.bytes, leader.bytes) << where;
        if (!inNode) {
          ++readingsTrailed;
          EXPECT_NE(t.nodeOf(f.peer), t.nodeOf(rank)) << where;  // a send or a reduction across nodes
        }
      }
      EXPECT_TRUE(across) << where << ": a phase only inside the node";
    }
    EXPECT_GT(readingsTrailed, 0u) << where;
    // Each other rank of the node, once for each of the column's blocks (one per node).
    EXPECT_EQ(fromNode, size_t(t.maxLocal() - 1) * size_t(t.nnodes()) * kEqualNodeCount * 4) << where;
    EXPECT_EQ(sentToNode, fromNode) << where;  // (every rank gives and takes as much)
  });
}

}  // namespace
}  // namespace strata
