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
#include "algo/hierarchical/teams.h"
#include "algo/log_blocks.h"
#include "algo/ring_blocks.h"
#include "algo/select.h"
#include "core/dtype.h"
#include "core/error.h"
#include "support/clusters.h"
#include "support/plan_runner.h"
#include "topo/topology.h"

namespace strata {
namespace {

using test::cluster;
using test::kColls;

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


// Phases of the plans every rank builds for `a` on `t` (a.rank and a.topo set here).
size_t phasesOverRanks(CollArgs a, const Topology& t, const Config& cfg) {
  size_t phases = 0;
  a.topo = &t;
  for (a.rank = 0; a.rank < a.nranks; ++a.rank) phases += buildCollectivePlan(a, OpDesc{}, cfg).phases.size();
  return phases;
}

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
  std::set<std::pair<bool, bool>> formsSeen;  // hier_halving's all-reduce: (doubles, one part of several ranks)
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
        // hier_halving's all-reduce every way across nodes (count 37):
        // halving then doubling where the network has no latency (the fewest
        // bytes win); recursive doubling of K parts where latency is nearly
        // everything and one transfer gets one of the node's rails (four);
        // of one part where each message a node queues on its link also
        // costs a gap (8 x 1 has one part already). Uneven nodes take what
        // the model puts first (a smaller node's ranks carry several parts
        // one after another, which one part spares them), count 1 too; on
        // two nodes halving and doubling move the same bytes (a tie).
        struct Links { double alphaUs, gbps, gapUs; int rails; HierHalvingAllReduceForm expected; };
        const int k = topo.maxLocal();
        for (const Links& l : {Links{0, 0.001, 0, 1, {false, k}}, Links{1000, 0.001, 0, 4, {true, k}},
                               Links{1000, 10, 500, 1, {true, 1}}}) {
          if (nodes == 1) break;
          Topology shaped = topo;
          shaped.inter = LinkParams{l.alphaUs, l.gbps, "test"};
          shaped.inter.gapUs = l.gapUs;
          shaped.inter.rails = l.rails;
          for (size_t count : {size_t(1), size_t(37)}) {
            const HierHalvingAllReduceForm form = hierHalvingAllReduceForm(count * 4, shaped, 4096);
            formsSeen.insert({form.doubles, form.columns == 1 && k > 1});
            if (count == 37 && maxCarried(topo, k) == 1 && (nodes > 2 || l.alphaUs > 0)) {
              ASSERT_EQ(form.doubles, l.expected.doubles) << n << " ranks, alpha " << l.alphaUs;
              ASSERT_EQ(form.columns, l.expected.columns) << n << " ranks, alpha " << l.alphaUs << " gap " << l.gapUs;
            }
            std::string err = test::runPlanCase(Coll::kAllReduce, "hier_halving", count == 37, n, count,
                                                strataFloat32, count == 1 ? strataSum : strataAvg, 0, &shaped);
            ASSERT_EQ(err, "") << n << " ranks, " << per << " per node" << (roundRobin ? " round-robin " : " ")
                               << "all-reduce hier_halving count " << count << " inter alpha " << l.alphaUs
                               << " gap " << l.gapUs;
          }
        }
      }
  EXPECT_EQ(formsSeen, (std::set<std::pair<bool, bool>>{{false, false}, {true, false}, {true, true}}))
      << "hier_halving's all-reduce did not take every form across nodes";
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

// Bytes node m of N sends in hier_halving's short all-reduce, each carried
// part all-reduced across nodes by recursive doubling of the whole part
// (all_reduce/recursive_doubling.cc): a node's carriers send the whole vector
// once a round; off powers of two the first 2(N-p) nodes pair up, the even one
// handing its vector over, the odd one handing the result back.
double doublingBytesOfNode(int m, int N, double vectorBytes) {
  int p = 1, rounds = 0;
  while (p * 2 <= N) p *= 2, ++rounds;
  const int rem = N - p;
  if (m < 2 * rem && m % 2 == 0) return vectorBytes;
  return (rounds + (m < 2 * rem ? 1 : 0)) * vectorBytes;
}

// The bandwidth forms move the minimum over each node's link; hier_halving's
// all-reduce, where the model takes its short form (recursive doubling across
// nodes, latency-bound parts), exactly the doubling's bytes.
TEST(HierPlans, HierarchicalRingsSendTheMinimumOverEachNodesLink) {
  int halved = 0, doubled = 0;
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
        const bool halvingAllReduce = x.coll == Coll::kAllReduce && std::string(algo) == "hier_halving";
        const bool doubles = halvingAllReduce && hierHalvingAllReduceForm(count * 4, t, 1 << 16).doubles;
        if (halvingAllReduce) ++(doubles ? doubled : halved);
        Traffic tr = simulate(t, x.coll, algo, perRankCount, 0);
        ASSERT_TRUE(tr.finished) << tr.problem;
        for (int m = 0; m < nodes; ++m)
          EXPECT_NEAR(tr.interOut[size_t(m)], doubles ? doublingBytesOfNode(m, nodes, double(count) * e) : x.bytes,
                      2 * n * per * e)
              << algo << " " << collName(x.coll) << " " << nodes << "x" << per << " node " << m
              << (doubles ? " (doubling across nodes)" : "");
      }
    }
  EXPECT_GT(halved, 0) << "no case took hier_halving's halving form";
  EXPECT_GT(doubled, 0) << "no case took hier_halving's doubling form";
}

// A plan says how it runs where the algorithm's name does not (logged at
// STRATA_DEBUG=INFO): the radix and form the model gave a hierarchical
// reduce-scatter / all-gather, hier_halving's all-reduce's form across nodes.
TEST(HierPlans, PlansSayHowTheyRunAcrossNodes) {
  auto planOf = [](const Topology& t, Coll coll, const char* algo, size_t count) {
    CollArgs a;
    a.coll = coll;
    a.nranks = t.nranks();
    a.count = count;
    a.topo = &t;
    a.chunkBytes = 1 << 16;
    Config cfg;
    cfg.algo = algo;
    return buildCollectivePlan(a, OpDesc{}, cfg);
  };
  const Topology t = cluster(64, 8), one = cluster(1, 8);
  const size_t perRank = (16u << 20) / size_t(t.nranks());  // a 16 MiB all-gather
  const int radix = hierRadixFor(Coll::kAllGather, 16u << 20, t, 1 << 16);
  EXPECT_NE(planOf(t, Coll::kAllGather, "hier_radix", perRank).shape.find(format("radix %d across nodes", radix)),
            std::string::npos);
  EXPECT_EQ(planOf(t, Coll::kAllGather, "hier_ring", 1).shape, "");  // a ring, one after the other: nothing to add
  // A few bytes: K parts and one predict alike, and one takes the tie.
  EXPECT_EQ(planOf(t, Coll::kAllReduce, "hier_halving", 2).shape,
            "recursive doubling of the node's sum by one rank per node across nodes");
  Topology railed = t;  // a transfer gets one of a node's 8 rails: K parts are 8x faster in bytes
  railed.inter = LinkParams{1000, 0.001, "test"};
  railed.inter.rails = 8;
  EXPECT_EQ(planOf(railed, Coll::kAllReduce, "hier_halving", 37).shape,
            "recursive doubling of whole parts across nodes");
  EXPECT_EQ(planOf(t, Coll::kAllReduce, "hier_halving", 16u << 20).shape, "halving then doubling across nodes");
  EXPECT_EQ(planOf(one, Coll::kAllReduce, "hier_halving", 2).shape, "");
  EXPECT_EQ(planOf(one, Coll::kAllGather, "hier_radix", perRank).shape, "");
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
          // inside the node, where its stage runs beside that exchange
          // (node_fanout.h, node_fanin.h), per step each such range also goes
          // to or comes from every other rank of the node (the all-gather's
          // own block too).
          const size_t limit = size_t(4 * steps + 4 * (per - 1) * steps + 2 * (per - 1) + 2);
          EXPECT_LE(p.flows.size(), limit)
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
      {Coll::kAllToAll, "hier_pairwise"},       {Coll::kAllToAll, "bruck"},
      {Coll::kReduceScatter, "recursive_halving"},
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
      // Over all ranks (a folded-out rank has no rounds).
      const size_t slowPhases = phasesOverRanks(a, slow, cfg), fastPhases = phasesOverRanks(a, fast, cfg);
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

// The rings inside a node take slices longer than the pipeline chunk where
// the node's link would move a chunk in under four of its latencies, up to
// half of what a link buffers; not where that buffering is unknown or too
// small, nor on this project's shm defaults. Longer slices mean fewer phases
// and a shorter prediction, with the same results (the in-memory links then
// buffer exactly what the topology says), on even and uneven nodes.
TEST(HierPlans, RingsInsideFastNodesTakeLongerSlices) {
  const size_t chunk = 524288;
  Topology t = cluster(2, 8);
  t.intra = LinkParams{2, 450, "test"};  // NVLink class: a chunk in 1.2 us
  EXPECT_EQ(nodeRingSliceBytes(t, chunk), chunk);  // buffering unknown
  t.linkBufferBytes = size_t(4) << 20;
  EXPECT_EQ(nodeRingSliceBytes(t, chunk), size_t(2) << 20);  // wants 3.6 MB: half the buffer
  t.linkBufferBytes = size_t(1) << 20;
  EXPECT_EQ(nodeRingSliceBytes(t, chunk), chunk);  // half the buffer is the chunk
  t.linkBufferBytes = size_t(64) << 20;
  EXPECT_EQ(nodeRingSliceBytes(t, chunk), size_t(3600000));
  t.intra = LinkParams{1.5, 8, "default (shm)"};  // 48 KB wanted
  EXPECT_EQ(nodeRingSliceBytes(t, chunk), chunk);

  const std::pair<Coll, const char*> cases[] = {
      {Coll::kAllReduce, "hier_ring"},      {Coll::kAllReduce, "hier_halving"},
      {Coll::kReduceScatter, "hier_ring"},  {Coll::kReduceScatter, "hier_halving"},
      {Coll::kReduceScatter, "hier_radix"}, {Coll::kAllGather, "hier_ring"},
      {Coll::kAllGather, "hier_halving"},   {Coll::kAllGather, "hier_radix"}};
  const size_t count = 2053;  // a prime: slices that do not split evenly
  for (const Layout& l : layouts()) {
    if (l.nodeOf.size() > 8) continue;
    Topology fast = Topology::fromNodeIds(l.nodeOf);
    fast.intra = LinkParams{2, 450, "test"};
    fast.inter = LinkParams{20, 1, "test"};
    Topology unknown = fast;
    fast.linkBufferBytes = 16384;  // slices of 8 KiB instead of the 4 KiB chunk
    EXPECT_EQ(nodeRingSliceBytes(fast, 4096), size_t(8192));
    for (const auto& [coll, algo] : cases) {
      CollArgs a;
      a.coll = coll;
      a.nranks = fast.nranks();
      a.count = coll == Coll::kAllReduce ? count * size_t(a.nranks) : count;
      a.chunkBytes = 4096;
      Config cfg;
      cfg.algo = algo;
      const size_t fastPhases = phasesOverRanks(a, fast, cfg), plainPhases = phasesOverRanks(a, unknown, cfg);
      // The outer slices (hierBlockSlices, hierOuterSlices) keep what the
      // ring inside a node moves at a chunk a node: fewer phases only with
      // several nodes, and for the all-reduce only where a part is longer.
      const size_t bytes = collectiveBytes(coll, a.count, 4, a.nranks);
      const double fastUs = predictUs(algo, coll, bytes, fast, 4096), plainUs = predictUs(algo, coll, bytes, unknown, 4096);
      // (Equal nodes may have no ring inside them, node_fanout.h and
      // node_fanin.h, and on the two links not always the same form.)
      const bool sideFast = stagesSideBySidePay(algo, coll, bytes, fast, 4096),
                 sidePlain = stagesSideBySidePay(algo, coll, bytes, unknown, 4096);
      const bool ringInside = fast.nnodes() > 1 && fast.maxLocal() > 1 && coll != Coll::kAllReduce &&
                              !sideFast && !sidePlain;
      if (ringInside) {
        EXPECT_LT(fastPhases, plainPhases) << l.name << " " << collName(coll) << " " << algo;
        EXPECT_LT(fastUs, plainUs) << l.name << " " << collName(coll) << " " << algo;
      } else if (sideFast == sidePlain) {
        EXPECT_LE(fastPhases, plainPhases) << l.name << " " << collName(coll) << " " << algo;
        EXPECT_LE(fastUs, plainUs) << l.name << " " << collName(coll) << " " << algo;
      }
      for (bool inPlace : {false, true}) {
        std::string err = test::runPlanCase(coll, algo, inPlace, fast.nranks(), a.count, strataFloat32, strataSum,
                                            0, &fast);
        ASSERT_EQ(err, "") << l.name << " " << collName(coll) << " " << algo << (inPlace ? " in place" : "");
      }
    }
  }
}

// The flat pairwise all-to-all on a network of rails: node by node where a
// rail serves at most two of a node's ranks (every step across nodes pairs
// two nodes' ranks one to one, all ranks at the same node distance), in rank
// order otherwise (one link per node, four ranks a rail, uneven nodes); the
// results match the reference either way, in and out of place, at odd counts.
TEST(HierPlans, PairwiseAllToAllGoesNodeByNodeOnRails) {
  struct Shape {
    int nodes, per, rails;
    bool uneven, nodeByNode;
  };
  for (const Shape& sh : {Shape{2, 8, 8, false, true}, Shape{3, 5, 4, false, true}, Shape{4, 3, 2, false, true},
                          Shape{2, 4, 4, false, true}, Shape{3, 1, 2, false, true}, Shape{2, 8, 2, false, false},
                          Shape{3, 4, 1, false, false}, Shape{3, 4, 4, true, false}}) {
    Topology t = cluster(sh.nodes, sh.per, sh.uneven);
    t.inter.rails = sh.rails;
    const std::string name = std::to_string(sh.nodes) + "x" + std::to_string(sh.per) + (sh.uneven ? " uneven" : "") +
                             ", " + std::to_string(sh.rails) + " rails";
    EXPECT_EQ(pairwiseGoesNodeByNode(t), sh.nodeByNode) << name;
    const int n = t.nranks();
    CollArgs a;
    a.coll = Coll::kAllToAll;
    a.nranks = n;
    a.count = 3;
    a.topo = &t;
    Config cfg;
    cfg.algo = "pairwise";
    std::vector<std::vector<int>> sendsTo(static_cast<size_t>(n));  // per rank, the peer of each step
    for (int r = 0; r < n; ++r) {
      a.rank = r;
      Plan p = buildCollectivePlan(a, OpDesc{}, cfg);
      for (const Flow& f : p.flows)
        if (f.kind == FlowKind::kSend) sendsTo[size_t(r)].push_back(f.peer);
      ASSERT_EQ(sendsTo[size_t(r)].size(), size_t(n - 1)) << name;
    }
    for (size_t k = 0; k + 1 < size_t(n); ++k) {
      std::set<int> receivers;
      std::set<int> distances;
      for (int r = 0; r < n; ++r) {
        const int to = sendsTo[size_t(r)][k];
        receivers.insert(to);
        distances.insert((t.nodeOf(to) - t.nodeOf(r) + t.nnodes()) % t.nnodes());
        if (!sh.nodeByNode) EXPECT_EQ(to, (r + int(k) + 1) % n) << name << " step " << k;
      }
      EXPECT_EQ(receivers.size(), size_t(n)) << name << " step " << k << ": a receiver twice";
      if (sh.nodeByNode) EXPECT_EQ(distances.size(), 1u) << name << " step " << k;
    }
    for (size_t count : {size_t(1), size_t(37)})
      for (bool inPlace : {false, true}) {
        std::string err = test::runPlanCase(Coll::kAllToAll, "pairwise", inPlace, n, count, strataFloat32, strataSum,
                                            0, &t);
        EXPECT_EQ(err, "") << name << " count " << count << (inPlace ? " in place" : "");
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

}  // namespace
}  // namespace strata
