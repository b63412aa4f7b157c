// Hierarchical algorithms on synthetic topologies, without processes:
//  - every collective x algorithm run by the real executor over in-memory
//    links on layouts up to 24 ranks (even, uneven such as 3 + 1, round-robin
//    placement), checked against the reference;
//  - plan construction for 1..64 nodes x 1..8 ranks checked by a symbolic
//    run (every byte sent is received, every rank finishes) and by counting
//    the bytes each node sends over the network (the hierarchical ring must
//    reach the minimum, 2(N-1)/N of the data for an all-reduce).
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "algo/algorithms.h"
#include "algo/cost_model.h"
#include "algo/log_blocks.h"
#include "algo/select.h"
#include "core/dtype.h"
#include "core/error.h"
#include "support/plan_runner.h"
#include "topo/topology.h"

namespace strata {
namespace {

// Node id of every rank, e.g. {0,0,0,1} = 3 + 1.
struct Layout {
  const char* name;
  std::vector<long long> nodeOf;
};

void PrintTo(const Layout& l, std::ostream* os) { *os << l.name; }

std::vector<Layout> layouts() {
  return {
      {"2x2", {0, 0, 1, 1}},
      {"2x2_roundrobin", {0, 1, 0, 1}},
      {"3plus1", {0, 0, 0, 1}},
      {"1plus3", {0, 1, 1, 1}},
      {"2x3", {0, 0, 0, 1, 1, 1}},
      {"3x2_roundrobin", {0, 1, 2, 0, 1, 2}},
      {"2plus1plus2", {0, 0, 1, 2, 2}},
      {"4x2", {0, 0, 1, 1, 2, 2, 3, 3}},
      {"1x5", {0, 0, 0, 0, 0}},
      {"5x1", {0, 1, 2, 3, 4}},
      {"3x8", std::vector<long long>{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2}},
  };
}

const Coll kColls[] = {Coll::kAllReduce, Coll::kReduceScatter, Coll::kAllGather, Coll::kBroadcast, Coll::kReduce,
                       Coll::kAllToAll};

class HierExec : public ::testing::TestWithParam<Layout> {};

TEST_P(HierExec, EveryCollectiveAndAlgorithmMatchesReference) {
  const Layout& l = GetParam();
  Topology topo = Topology::fromNodeIds(l.nodeOf);
  topo.intra = LinkParams{1, 10, "test"};
  topo.inter = LinkParams{20, 1, "test"};
  const int n = topo.nranks();
  for (Coll coll : kColls) {
    std::vector<std::string> algos = algorithmNames(coll);
    algos.push_back("");  // the cost model's choice
    for (const std::string& algo : algos)
      for (bool inPlace : {false, true})
        for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(1023)}) {
          if (n > 8 && count == 7) continue;  // keep the 24-rank layout quick
          int root = n > 2 ? n / 2 + 1 : n - 1;
          std::string err = test::runPlanCase(coll, algo.c_str(), inPlace, n, count, strataFloat32, strataSum,
                                              root, &topo);
          ASSERT_EQ(err, "") << l.name << " " << collName(coll) << " " << (algo.empty() ? "auto" : algo)
                             << (inPlace ? " in place" : "") << " count=" << count;
        }
  }
}

TEST_P(HierExec, OtherTypesAndOps) {
  const Layout& l = GetParam();
  Topology topo = Topology::fromNodeIds(l.nodeOf);
  const int n = topo.nranks();
  struct TO { strataDataType_t t; strataRedOp_t op; };
  for (Coll coll : {Coll::kAllReduce, Coll::kReduceScatter, Coll::kReduce})
    for (const char* algo : {"hier", "hier_tree"})
      for (TO to : {TO{strataBfloat16, strataAvg}, TO{strataInt32, strataMax}, TO{strataFloat64, strataProd},
                    TO{strataInt8, strataMin}}) {
        std::string err = test::runPlanCase(coll, algo, false, n, 1031, to.t, to.op, n - 1, &topo);
        ASSERT_EQ(err, "") << l.name << " " << collName(coll) << " " << algo << " " << dtypeName(to.t) << " "
                           << redOpName(to.op);
      }
}

// The hierarchical reduce-scatter / all-gather move a column as strided runs;
// fusion hands them buffers made of pieces: every step must stop at both a
// run's and a piece's end.
TEST_P(HierExec, ColumnsOverBuffersInPieces) {
  const Layout& l = GetParam();
  Topology topo = Topology::fromNodeIds(l.nodeOf);
  const int n = topo.nranks();
  struct TO { strataDataType_t t; strataRedOp_t op; };
  for (Coll coll : {Coll::kReduceScatter, Coll::kAllGather})
    for (const char* algo : {"hier_ring", "hier_halving", "hier_radix"})
      for (TO to : {TO{strataFloat32, strataSum}, TO{strataFloat16, strataAvg}})
        for (size_t pieceElems : {size_t(1), size_t(13), size_t(700)}) {
          if (n > 8 && pieceElems == 1) continue;  // keep the 24-rank layout quick
          std::string err = test::runPlanCase(coll, algo, false, n, 1031, to.t, to.op, 0, &topo, pieceElems);
          ASSERT_EQ(err, "") << l.name << " " << collName(coll) << " " << algo << " " << dtypeName(to.t)
                             << " pieces of ~" << pieceElems;
        }
}

// The algorithms that carry columns between nodes on every world of 1..17
// ranks with 1..4 ranks per node (node by node, the last node holding what is
// left, so most worlds have an uneven node), and round-robin, against the
// reference: the log-step and aggregated ones, and the hierarchical rings
// they share their composition with.
TEST(HierSweep, EveryWorldUpTo17RanksWithUpTo4PerNode) {
  struct A { Coll coll; const char* algo; };
  const A algos[] = {{Coll::kReduceScatter, "hier_halving"}, {Coll::kReduceScatter, "hier_ring"},
                     {Coll::kAllGather, "hier_halving"},     {Coll::kAllGather, "hier_ring"},
                     {Coll::kAllReduce, "hier_halving"},     {Coll::kAllToAll, "hier_pairwise"},
                     {Coll::kReduceScatter, "recursive_halving"}, {Coll::kAllGather, "recursive_doubling"},
                     {Coll::kReduceScatter, "hier_radix"},   {Coll::kAllGather, "hier_radix"}};
  for (int n = 1; n <= 17; ++n)
    for (int per = 1; per <= 4; ++per)
      for (bool roundRobin : {false, true}) {
        const int nodes = (n + per - 1) / per;
        if (roundRobin && (nodes == 1 || per == 1)) continue;  // the same as node by node
        std::vector<long long> ids;
        for (int r = 0; r < n; ++r) ids.push_back(roundRobin ? r % nodes : r / per);
        Topology topo = Topology::fromNodeIds(ids);
        for (const A& x : algos)
          for (size_t count : {size_t(1), size_t(37)}) {
            const strataRedOp_t op = count == 1 ? strataSum : strataAvg;
            std::string err = test::runPlanCase(x.coll, x.algo, count == 37, n, count, strataFloat32, op, 0, &topo);
            ASSERT_EQ(err, "") << n << " ranks, " << per << " per node" << (roundRobin ? " round-robin " : " ")
                               << collName(x.coll) << " " << x.algo << " count " << count;
          }
      }
}

INSTANTIATE_TEST_SUITE_P(Layouts, HierExec, ::testing::ValuesIn(layouts()),
                         [](const auto& info) { return std::string(info.param.name); });

// ---- Symbolic runs of plans for large synthetic clusters ----

struct Traffic {
  bool finished = false;
  std::string problem;
  std::vector<double> interOut;  // bytes each node sends to other nodes
};

// Runs every rank's plan with unbounded links, counting bytes: sends and
// forwards add to the link, receives take from it once enough has arrived.
Traffic simulate(const Topology& topo, Coll coll, const std::string& algo, size_t count, int root) {
  const int n = topo.nranks();
  std::vector<Plan> plans;
  for (int r = 0; r < n; ++r) {
    CollArgs a;
    a.coll = coll;
    a.rank = r;
    a.nranks = n;
    a.count = count;
    a.root = root;
    a.topo = &topo;
    a.chunkBytes = 1 << 16;
    Config cfg;
    cfg.algo = algo;
    OpDesc d;
    plans.push_back(buildCollectivePlan(a, d, cfg));
    if (plans.back().algorithm != algo && !(algo == "hier" || algo.empty())) {
      Traffic t;
      t.problem = "built " + plans.back().algorithm + " instead of " + algo;
      return t;
    }
  }
  std::map<std::pair<int, int>, double> link;
  Traffic out;
  out.interOut.assign(size_t(topo.nnodes()), 0);
  auto push = [&](int from, int to, size_t bytes) {
    link[{from, to}] += double(bytes);
    if (topo.nodeOf(from) != topo.nodeOf(to)) out.interOut[size_t(topo.nodeOf(from))] += double(bytes);
  };
  std::vector<size_t> phase(size_t(n), 0);
  std::vector<std::vector<bool>> done(static_cast<size_t>(n));
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < n; ++r) {
      const Plan& p = plans[size_t(r)];
      while (phase[size_t(r)] < p.phases.size()) {
        const Phase& ph = p.phases[phase[size_t(r)]];
        auto& d = done[size_t(r)];
        if (d.size() != ph.count) d.assign(ph.count, false);
        bool all = true;
        for (uint32_t i = 0; i < ph.count; ++i) {
          if (d[i]) continue;
          const Flow& f = p.flows[ph.first + i];
          if (f.kind == FlowKind::kRecv) {
            double& avail = link[{f.peer, r}];
            if (avail < double(f.bytes)) {
              all = false;
              continue;
            }
            avail -= double(f.bytes);
          } else if (f.kind == FlowKind::kSend) {
            push(r, f.peer, f.bytes);
          }
          if (f.forwardPeer >= 0) push(r, f.forwardPeer, f.bytes);
          d[i] = true;
          progress = true;
        }
        if (!all) break;
        d.clear();
        phase[size_t(r)]++;
        progress = true;
      }
    }
  }
  for (int r = 0; r < n; ++r)
    if (phase[size_t(r)] < plans[size_t(r)].phases.size()) {
      out.problem = format("rank %d never finishes phase %zu of %zu", r, phase[size_t(r)],
                           plans[size_t(r)].phases.size());
      return out;
    }
  for (auto& [key, bytes] : link)
    if (bytes != 0) {
      out.problem = format("%g bytes from rank %d to rank %d are never received", bytes, key.first, key.second);
      return out;
    }
  out.finished = true;
  return out;
}

size_t carriedColumnsCount(const Topology& t, int rank) {
  const int l = int(t.node(t.nodeOf(rank)).size());
  size_t n = 0;
  for (int j = t.place(rank).local; j < t.maxLocal(); j += l) ++n;
  return n;
}

Topology cluster(int nodes, int perNode, bool uneven = false) {
  std::vector<long long> ids;
  for (int m = 0; m < nodes; ++m)
    for (int i = 0; i < (uneven ? 1 + (m * 5) % perNode : perNode); ++i) ids.push_back(m);
  Topology t = Topology::fromNodeIds(ids);
  t.intra = LinkParams{1, 100, "test"};
  t.inter = LinkParams{15, 50, "test"};
  return t;
}

TEST(HierPlans, EveryRankFinishesOnClustersUpTo64NodesOf8) {
  for (int nodes : {1, 2, 3, 8, 64})
    for (int per : {1, 2, 3, 8})
      for (bool uneven : {false, true}) {
        if (uneven && per == 1) continue;
        Topology t = cluster(nodes, per, uneven);
        const int root = t.nranks() / 2;
        for (Coll coll : kColls)
          for (const std::string& algo : algorithmNames(coll)) {
            bool flat = algo.rfind("hier", 0) != 0;
            if (flat && t.nranks() > 64) continue;  // flat plans are covered elsewhere; keep this quick
            Traffic tr = simulate(t, coll, algo, 4099, root);
            ASSERT_TRUE(tr.finished) << nodes << " nodes x " << per << (uneven ? " (uneven) " : " ")
                                     << collName(coll) << " " << algo << ": " << tr.problem;
          }
      }
}

TEST(HierPlans, HierarchicalRingsSendTheMinimumOverEachNodesLink) {
  for (const char* algo : {"hier_ring", "hier_halving", "hier_radix"})
  for (int nodes : {2, 3, 8, 13, 64})
    for (int per : {2, 4, 8}) {
      Topology t = cluster(nodes, per);
      const double n = t.nranks(), N = nodes, e = 4;
      const size_t count = size_t(n) * 1021;
      struct Expect { Coll coll; double bytes; };
      for (Expect x : {Expect{Coll::kAllReduce, 2 * (N - 1) / N * double(count) * e},
                       Expect{Coll::kReduceScatter, (N - 1) / N * double(count) * e},
                       Expect{Coll::kAllGather, (N - 1) / N * double(count) * e}}) {
        if (x.coll == Coll::kAllReduce && std::string(algo) == "hier_radix") continue;  // reduce-scatter, all-gather only
        size_t perRankCount = x.coll == Coll::kAllReduce ? count : count / size_t(n);
        Traffic tr = simulate(t, x.coll, algo, perRankCount, 0);
        ASSERT_TRUE(tr.finished) << tr.problem;
        for (int m = 0; m < nodes; ++m)
          EXPECT_NEAR(tr.interOut[size_t(m)], x.bytes, 2 * n * per * e)
              << algo << " " << collName(x.coll) << " " << nodes << "x" << per << " node " << m;
      }
    }
}

// At scale a plan must stay small: a column moves as one strided flow, so a
// rank's log-step reduce-scatter / all-gather has a few flows per step
// (ceil(log2 N) steps across nodes, L-1 inside), not one per block; and the
// flat log-step ones move the minimal (n-1)/n of the data in ceil(log2 n) steps.
TEST(HierPlans, LogStepPlansStaySmallAtScale) {
  for (int nodes : {64, 200, 512})
    for (bool roundRobin : {false, true}) {
      const int per = 8;
      std::vector<long long> ids;
      for (int r = 0; r < nodes * per; ++r) ids.push_back(roundRobin ? r % nodes : r / per);
      Topology t = Topology::fromNodeIds(ids);
      int steps = 0;
      while ((1 << steps) < nodes) ++steps;
      for (Coll coll : {Coll::kReduceScatter, Coll::kAllGather}) {
        CollArgs a;
        a.coll = coll;
        a.nranks = t.nranks();
        a.count = 3;
        a.topo = &t;
        Config cfg;
        cfg.algo = "hier_halving";
        for (int r : {0, 7, t.nranks() - 1}) {
          a.rank = r;
          Plan p = buildCollectivePlan(a, OpDesc{}, cfg);
          // Per step across nodes: at most two ranges (the cyclic wrap) each way;
          // inside: one flow per ring step (a column's runs are one flow).
          EXPECT_LE(p.flows.size(), size_t(4 * steps + 3 * (per - 1) + 2))
              << collName(coll) << " " << nodes << "x" << per << (roundRobin ? " round-robin" : "") << " rank " << r;
        }
      }
    }
  for (int n : {2, 3, 5, 8, 12, 17, 64}) {
    Topology t = cluster(1, n);
    for (Coll coll : {Coll::kReduceScatter, Coll::kAllGather}) {
      const char* algo = coll == Coll::kReduceScatter ? "recursive_halving" : "recursive_doubling";
      const size_t count = 1021;
      Traffic tr = simulate(t, coll, algo, count, 0);
      ASSERT_TRUE(tr.finished) << algo << " n=" << n << ": " << tr.problem;
      CollArgs a;
      a.coll = coll;
      a.nranks = n;
      a.count = count;
      Config cfg;
      cfg.algo = algo;
      int steps = 0;
      while ((1 << steps) < n) ++steps;
      for (int r = 0; r < n; ++r) {
        a.rank = r;
        Plan p = buildCollectivePlan(a, OpDesc{}, cfg);
        size_t sent = 0;
        for (const Flow& f : p.flows)
          if (f.kind == FlowKind::kSend || f.forwardPeer >= 0) sent += f.bytes;
        EXPECT_EQ(sent, size_t(n - 1) * count * 4) << algo << " n=" << n << " rank " << r;
        EXPECT_EQ(p.phases.size(), size_t(steps)) << algo << " n=" << n << " rank " << r;
      }
    }
  }
}

// A log step's phases last about a millisecond of the crossed link (at least
// 64 KiB, at most the chunk), and the cost model charges a latency for each
// phase the plan has.
TEST(HierPlans, LogStepPhasesLastAboutAMillisecondOfTheLink) {
  const size_t chunk = 524288;
  EXPECT_EQ(linkPhaseBytes(nullptr, chunk), chunk);
  Topology t = cluster(8, 1);
  t.inter.gbps = 0.025;  // 200 Mbit/s
  EXPECT_EQ(linkPhaseBytes(&t, chunk), size_t(65536));
  t.inter.gbps = 0.125;  // 1 Gbit/s
  EXPECT_EQ(linkPhaseBytes(&t, chunk), size_t(125000));
  t.inter.gbps = 25;
  EXPECT_EQ(linkPhaseBytes(&t, chunk), chunk);
  Topology one = cluster(1, 8);
  one.inter.gbps = 0.025;  // not crossed on one node
  one.intra.gbps = 10;
  EXPECT_EQ(linkPhaseBytes(&one, chunk), chunk);

  // 8 nodes, 128 KiB blocks: steps of 4, 2 and 1 blocks.
  const size_t count = 32768;
  for (double gbps : {0.025, 25.0}) {
    t.inter.gbps = gbps;
    t.inter.gapUs = 0;
    const size_t slice = linkPhaseBytes(&t, chunk), block = count * 4;
    const size_t phases = sliceCount(4 * block, slice) + sliceCount(2 * block, slice) + sliceCount(block, slice);
    for (const char* algo : {"recursive_halving", "hier_halving"}) {
      CollArgs a;
      a.coll = Coll::kReduceScatter;
      a.nranks = 8;
      a.count = count;
      a.topo = &t;
      a.chunkBytes = chunk;
      Config cfg;
      cfg.algo = algo;
      size_t exchanges = 0;  // phases that send to a peer
      Plan p = buildCollectivePlan(a, OpDesc{}, cfg);
      for (const Phase& ph : p.phases)
        for (uint32_t f = ph.first; f < ph.first + ph.count; ++f)
          if (p.flows[f].kind == FlowKind::kSend) {
            ++exchanges;
            break;
          }
      EXPECT_EQ(exchanges, phases) << algo << " at " << gbps << " GB/s";
      // One more microsecond of latency per message costs one per phase.
      const size_t bytes = collectiveBytes(Coll::kReduceScatter, count, 4, 8);
      t.inter.alphaUs = 100;
      const double base = predictUs(algo, Coll::kReduceScatter, bytes, t, chunk);
      t.inter.alphaUs = 101;
      EXPECT_NEAR(predictUs(algo, Coll::kReduceScatter, bytes, t, chunk) - base, double(phases), 0.01)
          << algo << " at " << gbps << " GB/s";
    }
  }
}

// The hierarchical rings' steps across nodes are cut into the same phases:
// on 4 nodes x 2 ranks at 200 Mbit/s, with a 256 KiB block per node and
// column, each of rank 0's ring passes across nodes (one for reduce-scatter
// and all-gather, two for all-reduce) is 4 phases per step of 64 KiB (1 at
// 25 GB/s): 4 steps as the plan runs them (the first send and the last
// receive apart), and the model charges one inter-node latency for each of
// the 3 hops' phases.
TEST(HierPlans, HierRingStepsAcrossNodesAreLinkPhases) {
  const size_t chunk = 524288, count = 65536;  // 256 KiB per rank block
  Topology t = cluster(4, 2);
  t.inter.gapUs = 0;
  for (double gbps : {0.025, 25.0}) {
    t.inter.gbps = gbps;
    const size_t perStep = sliceCount(count * 4, linkPhaseBytes(&t, chunk));
    EXPECT_EQ(perStep, gbps < 1 ? size_t(4) : size_t(1));
    for (Coll coll : {Coll::kReduceScatter, Coll::kAllGather, Coll::kAllReduce}) {
      CollArgs a;
      a.coll = coll;
      a.nranks = 8;
      a.count = coll == Coll::kAllReduce ? count * 8 : count;  // all-reduce: 1 MiB per column, a quarter per node
      a.topo = &t;
      a.chunkBytes = chunk;
      Config cfg;
      cfg.algo = "hier_ring";
      Plan p = buildCollectivePlan(a, OpDesc{}, cfg);
      size_t across = 0, biggest = 0;  // rank 0's phases that move bytes to or from another node
      for (const Phase& ph : p.phases) {
        bool crosses = false;
        for (uint32_t f = ph.first; f < ph.first + ph.count; ++f) {
          const Flow& fl = p.flows[f];
          for (int peer : {fl.peer, fl.forwardPeer})
            if (peer >= 0 && t.nodeOf(peer) != t.nodeOf(0)) {
              crosses = true;
              biggest = std::max(biggest, fl.bytes);
            }
        }
        across += crosses;
      }
      const size_t passes = coll == Coll::kAllReduce ? 2 : 1;
      EXPECT_EQ(across, passes * 4 * perStep) << collName(coll) << " at " << gbps << " GB/s";
      EXPECT_LE(biggest, linkPhaseBytes(&t, chunk)) << collName(coll) << " at " << gbps << " GB/s";
      const size_t bytes = collectiveBytes(coll, a.count, 4, 8);
      t.inter.alphaUs = 100;
      const double base = predictUs("hier_ring", coll, bytes, t, chunk);
      t.inter.alphaUs = 101;
      EXPECT_NEAR(predictUs("hier_ring", coll, bytes, t, chunk) - base, double(passes * 3 * perStep), 0.01)
          << collName(coll) << " at " << gbps << " GB/s";
      t.inter.alphaUs = 15;
    }
  }
}

// On a slow link the whole-message exchanges (recursive doubling's rounds,
// the all-to-alls' steps) and the log steps are cut into phases of about a
// millisecond of it (64 KiB here): more phases than on a fast link, and the
// same results, on even and uneven layouts, counts that do not split evenly.
TEST(HierPlans, SlicedExchangesOnSlowLinksMatchTheReference) {
  const std::pair<Coll, const char*> cases[] = {
      {Coll::kAllReduce, "recursive_doubling"}, {Coll::kAllReduce, "hier_leader"},
      {Coll::kAllReduce, "hier_halving"},       {Coll::kAllToAll, "pairwise"},
      {Coll::kAllToAll, "hier_pairwise"},       {Coll::kReduceScatter, "recursive_halving"},
      {Coll::kReduceScatter, "hier_halving"},   {Coll::kAllGather, "recursive_doubling"},
      {Coll::kAllGather, "hier_halving"}};
  const size_t count = 40009;  // 160 KB a block: three 64 KiB slices
  for (const Layout& l : layouts()) {
    if (l.nodeOf.size() > 8) continue;
    Topology slow = Topology::fromNodeIds(l.nodeOf), fast = slow;
    slow.inter = LinkParams{20, 0.001, "test"};
    fast.inter = LinkParams{20, 100, "test"};
    for (const auto& [coll, algo] : cases) {
      if (slow.nnodes() == 1 && std::string(algo).rfind("hier", 0) == 0) continue;
      CollArgs a;
      a.coll = coll;
      a.nranks = slow.nranks();
      a.count = count;
      Config cfg;
      cfg.algo = algo;
      size_t slowPhases = 0, fastPhases = 0;  // over all ranks (a folded-out rank has no rounds)
      for (int r = 0; r < a.nranks; ++r) {
        a.rank = r;
        a.topo = &slow;
        slowPhases += buildCollectivePlan(a, OpDesc{}, cfg).phases.size();
        a.topo = &fast;
        fastPhases += buildCollectivePlan(a, OpDesc{}, cfg).phases.size();
      }
      // (hier_halving's all-reduce moves a part of a part across nodes: under one slice here.)
      if (slow.nnodes() > 1 && !(coll == Coll::kAllReduce && std::string(algo) == "hier_halving"))
        EXPECT_GT(slowPhases, fastPhases) << l.name << " " << algo;
      for (bool inPlace : {false, true}) {
        std::string err = test::runPlanCase(coll, algo, inPlace, slow.nranks(), count, strataFloat32, strataSum, 0,
                                            &slow);
        ASSERT_EQ(err, "") << l.name << " " << collName(coll) << " " << algo << (inPlace ? " in place" : "");
      }
    }
  }
}

// The aggregated all-to-all moves the same bytes over each node's link as the
// flat one, in one message per peer node and column instead of one per rank.
TEST(HierPlans, AggregatedAllToAllSendsOneMessagePerPeerNodeAndColumn) {
  for (int nodes : {2, 3, 8})
    for (int per : {2, 3, 4})
      for (bool uneven : {false, true}) {
        Topology t = cluster(nodes, per, uneven);
        const size_t count = 37;
        Traffic flat = simulate(t, Coll::kAllToAll, "pairwise", count, 0);
        Traffic agg = simulate(t, Coll::kAllToAll, "hier_pairwise", count, 0);
        ASSERT_TRUE(flat.finished && agg.finished) << flat.problem << agg.problem;
        for (int m = 0; m < nodes; ++m)
          EXPECT_EQ(agg.interOut[size_t(m)], flat.interOut[size_t(m)]) << nodes << "x" << per << " node " << m;
        CollArgs a;
        a.coll = Coll::kAllToAll;
        a.nranks = t.nranks();
        a.count = count;
        a.topo = &t;
        Config cfg;
        cfg.algo = "hier_pairwise";
        for (int r = 0; r < t.nranks(); ++r) {
          a.rank = r;
          Plan p = buildCollectivePlan(a, OpDesc{}, cfg);
          std::set<std::pair<size_t, int>> messages;  // (phase, peer on another node)
          for (size_t ph = 0; ph < p.phases.size(); ++ph)
            for (uint32_t i = 0; i < p.phases[ph].count; ++i) {
              const Flow& f = p.flows[p.phases[ph].first + i];
              if (f.kind == FlowKind::kSend && t.nodeOf(f.peer) != t.nodeOf(r)) messages.insert({ph, f.peer});
            }
          const size_t carried = carriedColumnsCount(t, r);
          EXPECT_LE(messages.size(), carried * size_t(nodes - 1)) << nodes << "x" << per << " rank " << r;
        }
      }
}

TEST(HierPlans, FlatRankOrderRingSuffersFromRoundRobinPlacementButHierarchicalDoesNot) {
  Topology byNode = Topology::fromNodeIds({0, 0, 1, 1}), roundRobin = Topology::fromNodeIds({0, 1, 0, 1});
  const size_t count = 1 << 16;
  double flatByNode = simulate(byNode, Coll::kAllReduce, "ring", count, 0).interOut[0];
  double flatRR = simulate(roundRobin, Coll::kAllReduce, "ring", count, 0).interOut[0];
  double hierByNode = simulate(byNode, Coll::kAllReduce, "hier_ring", count, 0).interOut[0];
  double hierRR = simulate(roundRobin, Coll::kAllReduce, "hier_ring", count, 0).interOut[0];
  EXPECT_NEAR(flatByNode, 1.5 * count * 4, 64);  // 2(n-1)/n, crossing once each way
  EXPECT_NEAR(flatRR, 3.0 * count * 4, 64);      // crossing at every hop
  EXPECT_NEAR(hierByNode, 1.0 * count * 4, 64);  // 2(N-1)/N
  EXPECT_EQ(hierByNode, hierRR);
}

// ---- The cost model ----

TEST(CostModel, PrefersLatencyAlgorithmsSmallAndBandwidthAlgorithmsLarge) {
  Topology one = cluster(1, 8);
  EXPECT_LT(predictUs("recursive_doubling", Coll::kAllReduce, 64, one, 1 << 19),
            predictUs("ring", Coll::kAllReduce, 64, one, 1 << 19));
  EXPECT_GT(predictUs("recursive_doubling", Coll::kAllReduce, 64 << 20, one, 1 << 19),
            predictUs("ring", Coll::kAllReduce, 64 << 20, one, 1 << 19));
  EXPECT_LT(predictUs("tree", Coll::kBroadcast, 64, one, 1 << 19),
            predictUs("chain", Coll::kBroadcast, 64, one, 1 << 19));
  EXPECT_GT(predictUs("tree", Coll::kBroadcast, 64 << 20, one, 1 << 19),
            predictUs("chain", Coll::kBroadcast, 64 << 20, one, 1 << 19));
}

TEST(CostModel, HierarchicalWinsLargeMessagesAcrossSlowLinks) {
  Topology t = cluster(4, 4);
  t.intra = LinkParams{1, 10, "test"};
  t.inter = LinkParams{30, 0.25, "test"};
  const size_t big = 64 << 20;
  for (Coll coll : {Coll::kAllReduce, Coll::kReduceScatter, Coll::kAllGather})
    EXPECT_LT(predictUs("hier_ring", coll, big, t, 1 << 19), predictUs("ring", coll, big, t, 1 << 19)) << collName(coll);
  EXPECT_LT(predictUs("hier_chain", Coll::kBroadcast, big, t, 1 << 19), predictUs("chain", Coll::kBroadcast, big, t, 1 << 19) * 1.01);
  // 2 nodes x 2 ranks at 2 Gbit/s: the hierarchical all-reduce approaches the
  // link bound S / B, the rank-order ring needs 1.5x as long.
  Topology two = Topology::fromNodeIds({0, 0, 1, 1});
  two.intra = LinkParams{1.5, 8, "test"};
  two.inter = LinkParams{40, 0.25, "test"};
  double bound = double(big) / (0.25 * 1e3);
  double hier = predictUs("hier_ring", Coll::kAllReduce, big, two, 1 << 19);
  double ring = predictUs("ring", Coll::kAllReduce, big, two, 1 << 19);
  EXPECT_GT(hier, bound);
  EXPECT_LT(hier, bound * 1.1);
  EXPECT_NEAR(ring / bound, 1.5, 0.1);
}

TEST(CostModel, PredictionsGrowWithSizeAndAutomaticChoiceIsTheMinimum) {
  Topology t = cluster(2, 2);
  t.inter = LinkParams{40, 0.25, "test"};
  for (Coll coll : kColls) {
    double prevBest = 0;
    for (size_t bytes = 8; bytes <= (size_t(256) << 20); bytes *= 4) {
      double best = 1e300;
      std::string bestName;
      for (const std::string& a : algorithmNames(coll)) {
        double us = predictUs(a, coll, bytes, t, 1 << 19);
        ASSERT_GE(us, 0) << a;
        if (us < best) best = us, bestName = a;
      }
      EXPECT_GE(best, prevBest) << collName(coll) << " " << bytes;
      prevBest = best;
      // The selector builds the predicted-fastest plan, or one within its tie
      // band (kTieFraction) that is hierarchical.
      CollArgs args;
      args.coll = coll;
      args.nranks = 4;
      args.count = (coll == Coll::kReduceScatter || coll == Coll::kAllGather || coll == Coll::kAllToAll) ? bytes / 16 : bytes / 4;
      if (args.count == 0) continue;
      args.topo = &t;
      OpDesc d;
      Plan p = buildCollectivePlan(args, d, Config{});
      EXPECT_LE(p.predictedUs, best * (1 + kTieFraction) * 1.0001) << collName(coll) << " " << bytes << " chose "
                                                                    << p.algorithm;
      if (p.predictedUs > best * 1.0101)
        EXPECT_EQ(p.algorithm.rfind("hier", 0), 0u) << collName(coll) << " " << bytes << ": " << p.algorithm
                                                    << " is not the fastest, so it must be a hierarchical tie";
    }
  }
}

TEST(CostModel, TiesGoToTheAlgorithmThatCrossesTheNetworkOncePerNode) {
  std::vector<Prediction> c = {{"recursive_doubling", 100.0, false}, {"ring", 300.0, false},
                               {"hier_ring", 150.0, true}, {"hier_leader", 102.5, true}};
  EXPECT_EQ(c[pickFastest(c, true)].algorithm, "hier_leader");       // 2.5% slower: a tie
  EXPECT_EQ(c[pickFastest(c, false)].algorithm, "recursive_doubling");  // one node: no preference
  c[3].us = 104.0;                                                     // 4% slower: not a tie
  EXPECT_EQ(c[pickFastest(c, true)].algorithm, "recursive_doubling");
  c[1].us = 99.5;  // a later flat one must win by more than 1%
  EXPECT_EQ(c[pickFastest(c, true)].algorithm, "recursive_doubling");
  c[1].us = 98.0;
  EXPECT_EQ(c[pickFastest(c, true)].algorithm, "ring");
  // Among hierarchical ties, the fastest of them.
  c = {{"recursive_doubling", 100.0, false}, {"hier_ring", 102.9, true}, {"hier_leader", 101.5, true}};
  EXPECT_EQ(c[pickFastest(c, true)].algorithm, "hier_leader");
  // Where the link hides latency, candidates that predict the same time (their
  // bytes') are told apart by the latency they hide: the less, the better.
  c = {{"hier_ring", 500.0, true, true, 800.0}, {"hier_halving", 500.0, true, true, 700.0},
       {"hier_radix", 499.0, true, false, 600.0}};
  EXPECT_EQ(c[pickFastest(c, true)].algorithm, "hier_halving");  // hier_radix is not offered
  c[1].us = 506.0;  // more than 1% slower: the time decides
  EXPECT_EQ(c[pickFastest(c, true)].algorithm, "hier_ring");
}

// A binomial tree sends to one child per phase, the largest subtree first, so
// that child does not share the link with the others (strata-sim: with every
// child in one phase a broadcast took 1.6-2x the levels' time from 1 MiB).
TEST(CostModel, TreeBroadcastSendsToOneChildPerPhaseLargestSubtreeFirst) {
  for (int n : {2, 5, 8, 13}) {
    for (int root : {0, n - 1}) {
      CollArgs a;
      a.coll = Coll::kBroadcast;
      a.nranks = n;
      a.rank = root;
      a.root = root;
      a.count = 1000;
      Plan plan;
      plan.elemSize = 4;
      buildTreeBroadcast(a, plan);
      std::vector<int> children;
      for (const Phase& ph : plan.phases) {
        int sends = 0;
        for (uint32_t i = ph.first; i < ph.first + ph.count; ++i)
          if (plan.flows[i].kind == FlowKind::kSend) sends++, children.push_back((plan.flows[i].peer - root + n) % n);
        EXPECT_LE(sends, 1) << n << " ranks";
      }
      int levels = 0;
      while ((1 << levels) < n) levels++;
      ASSERT_EQ(int(children.size()), levels) << n << " ranks";
      for (size_t k = 0; k < children.size(); ++k)  // relative ranks 2^(levels-1), ..., 2, 1
        EXPECT_EQ(children[k], 1 << (levels - 1 - int(k))) << n << " ranks";
    }
  }
}

// A chain streams its slices: one latency per hop for the first fragment,
// then the bytes at the slowest hop's rate (not a latency per slice and hop).
TEST(CostModel, ChainPaysOneLatencyPerHopNotPerSlice) {
  Topology t = cluster(3, 1);
  t.inter = LinkParams{15.0, 50.0, "test"};
  const double bytes = 64 << 20, frag = double(kMaxFragment);
  const double want = 2 * (15.0 + frag / 50e3) + (bytes - frag) / 50e3;
  EXPECT_NEAR(predictUs("chain", Coll::kBroadcast, size_t(bytes), t, 1 << 19), want, 0.01 * want);
  // One slice: the whole message is the fragment at each hop.
  EXPECT_NEAR(predictUs("chain", Coll::kBroadcast, 4096, t, 1 << 19), 2 * (15.0 + 4096 / 50e3), 0.01);
}

// A ring's block crosses consecutive hops, each at its own latency (as
// strata-sim replays it), not every step at the slowest hop's: on 2 nodes x 4
// the ring has 6 hops inside the nodes (2 us) and 2 between them (15 us).
TEST(CostModel, RingPaysEachHopItsOwnLatency) {
  Topology t = cluster(2, 4);
  t.intra = LinkParams{2.0, 100.0, "test"};
  t.inter = LinkParams{15.0, 50.0, "test"};
  // All-gather, 8 B (1 B blocks): 7 steps; the costliest 7 consecutive hops hold both network hops.
  EXPECT_NEAR(predictUs("ring", Coll::kAllGather, 8, t, 1 << 19), 5 * 2.0 + 2 * 15.0, 0.1);
  // All-reduce, 8 B: 14 steps, a whole lap (6 + 2 hops) and 6 more of which 2 cross nodes.
  EXPECT_NEAR(predictUs("ring", Coll::kAllReduce, 8, t, 1 << 19), (6 * 2.0 + 2 * 15.0) + (4 * 2.0 + 2 * 15.0), 0.1);
  // Hops all alike: every step the same latency.
  Topology one = cluster(8, 1);
  one.inter = LinkParams{15.0, 50.0, "test"};
  EXPECT_NEAR(predictUs("ring", Coll::kAllGather, 8, one, 1 << 19), 7 * 15.0, 0.1);
}

// A link that hides latency behind bytes (a token bucket's burst refunds the
// idle time between steps): all of it hidden, a run of steps costs the longer
// of its latencies and its bytes; half hidden, half of the smaller goes.
TEST(CostModel, HiddenLatencyLeavesTheLongerOfLatenciesAndBytes) {
  Topology t = cluster(4, 2);
  t.inter = LinkParams{100.0, 0.024, "test"};
  Topology none = t;
  none.inter.alphaUs = 0;
  for (size_t bytes : {size_t(64), size_t(16) << 10, size_t(1) << 20}) {
    const double lockstep = predictUs("hier_halving", Coll::kAllReduce, bytes, t, 1 << 19);
    const double bytesOnly = predictUs("hier_halving", Coll::kAllReduce, bytes, none, 1 << 19);
    ASSERT_GT(lockstep, bytesOnly);
    t.inter.latencyHidden = 1;
    EXPECT_NEAR(predictUs("hier_halving", Coll::kAllReduce, bytes, t, 1 << 19),
                std::max(lockstep - bytesOnly, bytesOnly), 1e-6 * lockstep) << bytes;
    t.inter.latencyHidden = 0.5;
    EXPECT_NEAR(predictUs("hier_halving", Coll::kAllReduce, bytes, t, 1 << 19),
                lockstep - 0.5 * std::min(lockstep - bytesOnly, bytesOnly), 1e-6 * lockstep) << bytes;
    t.inter.latencyHidden = 0;
  }
  // Inside one node nothing is hidden (shared memory keeps no burst).
  Topology one = cluster(1, 4);
  const double plain = predictUs("ring", Coll::kAllReduce, 1 << 20, one, 1 << 19);
  one.inter.latencyHidden = 1;
  EXPECT_DOUBLE_EQ(predictUs("ring", Coll::kAllReduce, 1 << 20, one, 1 << 19), plain);
}

// A node's network in rails (NICs): one transfer gets one rail's share, so a
// chain (one transfer leaving each node) slows by the rail count, while the
// hierarchical ring's columns (one per local rank, as many as the rails) keep
// all of the node's bandwidth.
TEST(CostModel, OneTransferRunsOnOneRail) {
  Topology t = cluster(3, 4);
  t.inter = LinkParams{15.0, 50.0, "test"};
  const size_t bytes = size_t(256) << 20;
  const double chainOne = predictUs("chain", Coll::kBroadcast, bytes, t, 1 << 19);
  const double hierOne = predictUs("hier_ring", Coll::kAllGather, bytes, t, 1 << 19);
  t.inter.rails = 4;
  const double chainFour = predictUs("chain", Coll::kBroadcast, bytes, t, 1 << 19);
  const double hierFour = predictUs("hier_ring", Coll::kAllGather, bytes, t, 1 << 19);
  // The chain streams at its slowest hop's rate: a hop across nodes, 12.5
  // instead of 50 GB/s (its hops inside a node run at 100 GB/s either way).
  EXPECT_GT(chainFour, 3.5 * chainOne);
  EXPECT_NEAR(hierFour, hierOne, 1e-6 * hierOne);
  // Two ranks per node on four rails: two transfers leave each node at once,
  // each on its own rail, half the node's bandwidth idle (latencies and the
  // inside of a node made negligible, so that the network's bytes are the time).
  Topology two = cluster(3, 2);
  two.intra = LinkParams{0.01, 1e5, "test"};
  two.inter = LinkParams{0.01, 50.0, "test"};
  const double hierTwoOne = predictUs("hier_ring", Coll::kAllGather, bytes, two, 1 << 19);
  two.inter.rails = 4;
  EXPECT_GT(predictUs("hier_ring", Coll::kAllGather, bytes, two, 1 << 19), 1.8 * hierTwoOne);
}

// The flat pairwise all-to-all: ranks drift apart (each moves on when its own
// receive lands), so it takes the longer of one rank's chain of receives and
// its node's link carrying every block that leaves it, not a latency and the
// shared bytes per step (which put it at 1.4x strata-sim's replay on 8 x 8).
TEST(CostModel, PairwiseAllToAllTakesTheLongerOfARanksChainAndItsNodesLink) {
  Topology t = cluster(8, 8);
  t.intra = LinkParams{2.0, 450.0, "test"};
  t.inter = LinkParams{15.0, 50.0, "test"};
  // 16 MiB (256 KiB blocks, one phase each): each node's link carries 8 ranks x 56 blocks.
  const double block = 256 << 10;
  const double link = 15.0 + 8 * 56 * block / 50e3;
  const double chain = 56 * (15.0 + block / 50e3) + 7 * (2.0 + block / 450e3);
  ASSERT_GT(link, chain);
  EXPECT_NEAR(predictUs("pairwise", Coll::kAllToAll, size_t(64 * block), t, 1 << 19), link, 1e-6 * link);
  // 64 KiB (1 KiB blocks): latency-bound, one rank's chain.
  const double small = 1024;
  const double smallChain = 56 * (15.0 + small / 50e3) + 7 * (2.0 + small / 450e3);
  EXPECT_NEAR(predictUs("pairwise", Coll::kAllToAll, size_t(64 * small), t, 1 << 19), smallChain, 1e-6 * smallChain);
  // One node: no network, every step after the last (the chain is the whole cost).
  Topology one = cluster(1, 5);
  one.intra = LinkParams{2.0, 10.0, "test"};
  EXPECT_NEAR(predictUs("pairwise", Coll::kAllToAll, 5 * 4096, one, 1 << 19), 4 * (2.0 + 4096 / 10e3), 1e-9);
}

TEST(CostModel, ForcedAlgorithmWinsOverTheModel) {
  Topology t = cluster(2, 2);
  CollArgs args;
  args.coll = Coll::kAllReduce;
  args.nranks = 4;
  args.count = 1 << 20;
  args.topo = &t;
  Config cfg;
  for (const char* forced : {"ring", "recursive_doubling", "hier_ring", "hier_leader"}) {
    cfg.algo = forced;
    EXPECT_EQ(buildCollectivePlan(args, OpDesc{}, cfg).algorithm, forced);
  }
  cfg.algo = "hier";
  EXPECT_EQ(buildCollectivePlan(args, OpDesc{}, cfg).algorithm, "hier_ring");
  args.coll = Coll::kBroadcast;
  EXPECT_EQ(buildCollectivePlan(args, OpDesc{}, cfg).algorithm, "hier_chain");
  args.coll = Coll::kAllToAll;
  EXPECT_EQ(buildCollectivePlan(args, OpDesc{}, cfg).algorithm, "hier_pairwise");
  // The log-step shapes answer to each other's names across collectives.
  struct Name { Coll coll; const char* forced; const char* built; };
  for (Name x : {Name{Coll::kReduceScatter, "recursive_halving", "recursive_halving"},
                 Name{Coll::kReduceScatter, "recursive_doubling", "recursive_halving"},
                 Name{Coll::kReduceScatter, "tree", "recursive_halving"},
                 Name{Coll::kAllGather, "recursive_halving", "recursive_doubling"},
                 Name{Coll::kAllGather, "recursive_doubling", "recursive_doubling"},
                 Name{Coll::kReduceScatter, "hier_halving", "hier_halving"},
                 Name{Coll::kAllGather, "hier_doubling", "hier_halving"},
                 Name{Coll::kAllReduce, "hier_halving", "hier_halving"},
                 Name{Coll::kAllToAll, "hier_pairwise", "hier_pairwise"},
                 Name{Coll::kAllToAll, "pairwise", "pairwise"}}) {
    args.coll = x.coll;
    cfg.algo = x.forced;
    EXPECT_EQ(buildCollectivePlan(args, OpDesc{}, cfg).algorithm, x.built) << collName(x.coll) << " " << x.forced;
  }
}

}  // namespace
}  // namespace strata
