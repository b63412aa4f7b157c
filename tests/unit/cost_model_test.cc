// The cost model and the selector on synthetic clusters: which algorithm
// wins where, and each algorithm's prediction against hand arithmetic (the
// shapes strata-sim's replay checked: chains, rings, trees, rails, the
// pairwise all-to-all).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "algo/algorithms.h"
#include "algo/cost_model.h"
#include "algo/select.h"
#include "support/clusters.h"
#include "topo/topology.h"

namespace strata {
namespace {

using test::cluster;
using test::kColls;

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
      // band (kTieFraction) that is hierarchical or sends the fewest
      // messages across the network.
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
      const double messages = networkMessagesPerNode(p.algorithm, coll, t),
                   bestMessages = networkMessagesPerNode(bestName, coll, t);
      if (p.predictedUs > best * 1.0101)
        EXPECT_TRUE(p.algorithm.rfind("hier", 0) == 0 || messages < bestMessages)
            << collName(coll) << " " << bytes << ": " << p.algorithm
            << " is not the fastest, so it must be a hierarchical tie or one with fewer messages";
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

// Where the model counts the messages each node sends across the network
// (the all-to-alls), the fewest win a tie, hierarchical or not.
TEST(CostModel, TiesGoToTheFewestMessagesAcrossTheNetworkWhereCounted) {
  Topology t = cluster(4, 2);
  EXPECT_EQ(networkMessagesPerNode("pairwise", Coll::kAllToAll, t), 12);      // 2 ranks x 6 remote peers
  EXPECT_EQ(networkMessagesPerNode("hier_pairwise", Coll::kAllToAll, t), 6);  // 2 columns x 3 nodes
  EXPECT_EQ(networkMessagesPerNode("bruck", Coll::kAllToAll, t), 5);          // steps to r-1 (one), r-2, r-4
  EXPECT_LT(networkMessagesPerNode("bruck", Coll::kAllToAll, cluster(1, 8)), 0) << "nothing crosses one node";
  EXPECT_LT(networkMessagesPerNode("ring", Coll::kAllGather, t), 0) << "not counted";
  std::vector<Prediction> c = {{"pairwise", 720.0, false, true, -1, 12}, {"hier_pairwise", 360.0, true, true, -1, 6},
                               {"bruck", 357.4, false, true, -1, 5}};
  EXPECT_EQ(c[pickFastest(c, true)].algorithm, "bruck") << "0.7% apart: a tie, and bruck sends fewer";
  c[2].us = 368.0;  // 2.2% slower, still a tie
  EXPECT_EQ(c[pickFastest(c, true)].algorithm, "bruck");
  c[2].us = 375.0;  // 4% slower: not a tie
  EXPECT_EQ(c[pickFastest(c, true)].algorithm, "hier_pairwise");
  c[2].us = 357.4;
  c[2].networkMessages = 6;  // as many: the time decides, an earlier one keeping its place within 1%
  EXPECT_EQ(c[pickFastest(c, true)].algorithm, "hier_pairwise");
  c[2].us = 350.0;
  EXPECT_EQ(c[pickFastest(c, true)].algorithm, "bruck");
  c[2].networkMessages = -1;  // not counted: the hierarchical one wins the tie
  EXPECT_EQ(c[pickFastest(c, true)].algorithm, "hier_pairwise");
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
// (An algorithm of one form; hier_halving's all-reduce takes the form whose
// prediction, hidden latency and all, is lowest, which lies between its
// bytes alone and its lockstep time.)
TEST(CostModel, HiddenLatencyLeavesTheLongerOfLatenciesAndBytes) {
  Topology t = cluster(4, 2);
  t.inter = LinkParams{100.0, 0.024, "test"};
  Topology none = t;
  none.inter.alphaUs = 0;
  for (size_t bytes : {size_t(64), size_t(16) << 10, size_t(1) << 20}) {
    const double lockstep = predictUs("hier_ring", Coll::kAllReduce, bytes, t, 1 << 19);
    const double bytesOnly = predictUs("hier_ring", Coll::kAllReduce, bytes, none, 1 << 19);
    ASSERT_GT(lockstep, bytesOnly);
    t.inter.latencyHidden = 1;
    EXPECT_NEAR(predictUs("hier_ring", Coll::kAllReduce, bytes, t, 1 << 19),
                std::max(lockstep - bytesOnly, bytesOnly), 1e-6 * lockstep) << bytes;
    t.inter.latencyHidden = 0.5;
    EXPECT_NEAR(predictUs("hier_ring", Coll::kAllReduce, bytes, t, 1 << 19),
                lockstep - 0.5 * std::min(lockstep - bytesOnly, bytesOnly), 1e-6 * lockstep) << bytes;
    t.inter.latencyHidden = 0;
    const double halvingLockstep = predictUs("hier_halving", Coll::kAllReduce, bytes, t, 1 << 19);
    const double halvingBytesOnly = predictUs("hier_halving", Coll::kAllReduce, bytes, none, 1 << 19);
    t.inter.latencyHidden = 1;
    const double halvingHidden = predictUs("hier_halving", Coll::kAllReduce, bytes, t, 1 << 19);
    EXPECT_LE(halvingHidden, halvingLockstep) << bytes;
    EXPECT_GE(halvingHidden, halvingBytesOnly * (1 - 1e-9)) << bytes;
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
  // On 4 rails (two of a node's ranks on each) the steps go node by node, all
  // ranks at once: each step across nodes pays its latency and the busiest
  // rail's two transfers at a rail's 12.5 GB/s; on 5 rails the busiest also
  // carries 2, at 10 GB/s. On 3 rails (three ranks on one) they keep rank order.
  t.inter.rails = 4;
  const double lockstep = 7 * (2.0 + block / 450e3) + 56 * (15.0 + 2 * block / 12.5e3);
  EXPECT_NEAR(predictUs("pairwise", Coll::kAllToAll, size_t(64 * block), t, 1 << 19), lockstep, 1e-6 * lockstep);
  t.inter.rails = 5;
  const double fiveRails = 7 * (2.0 + block / 450e3) + 56 * (15.0 + 2 * block / 10e3);
  EXPECT_NEAR(predictUs("pairwise", Coll::kAllToAll, size_t(64 * block), t, 1 << 19), fiveRails, 1e-6 * fiveRails);
  t.inter.rails = 3;
  EXPECT_NEAR(predictUs("pairwise", Coll::kAllToAll, size_t(64 * block), t, 1 << 19), link, 1e-6 * link);
}

// Bruck's all-to-all: ceil(log2 n) steps, step k moving the blocks whose
// slot has bit k set (as one message to rank - 2^k, in 64 KiB or longer
// slices on a slow link), each copied back after it, plus two layouts of all
// n blocks. On 8 nodes of one rank it beats the pairwise chain of 7
// latencies while blocks are small, and loses once the 12 blocks it moves
// (against 7) cost more than the 4 latencies it saves; the selector offers it
// only across nodes.
TEST(CostModel, BruckAllToAllTradesBytesForLatencies) {
  Topology t = cluster(8, 1);
  t.inter = LinkParams{15.0, 1.0, "test"};
  const double block = 64, copy = 2 / (t.memoryGbps * 1e3);
  const double bruck = 3 * 15.0 + 12 * block / 1e3 + (2 * 8 + 12) * block * copy;
  EXPECT_NEAR(predictUs("bruck", Coll::kAllToAll, size_t(8 * block), t, 1 << 19), bruck, 1e-6 * bruck);
  EXPECT_LT(predictUs("bruck", Coll::kAllToAll, 8 * 64, t, 1 << 19),
            0.6 * predictUs("pairwise", Coll::kAllToAll, 8 * 64, t, 1 << 19));
  EXPECT_GT(predictUs("bruck", Coll::kAllToAll, 8 << 20, t, 1 << 19),
            1.5 * predictUs("pairwise", Coll::kAllToAll, 8 << 20, t, 1 << 19));
  CollArgs args;
  args.coll = Coll::kAllToAll;
  args.nranks = 8;
  args.count = 16;
  args.topo = &t;
  EXPECT_EQ(buildCollectivePlan(args, OpDesc{}, Config{}).algorithm, "bruck");
  args.count = 1 << 20;
  EXPECT_NE(buildCollectivePlan(args, OpDesc{}, Config{}).algorithm, "bruck");
  Topology one = cluster(1, 8);
  one.intra = LinkParams{15.0, 1.0, "test"};
  args.count = 16;
  args.topo = &one;
  EXPECT_NE(buildCollectivePlan(args, OpDesc{}, Config{}).algorithm, "bruck") << "not offered on one node";
  // On a link of 1 MB/s a step is cut into 64 KiB phases (about a
  // millisecond of link each, never less than 64 KiB): each of the three
  // steps' 4 blocks of 100 KB pays ceil(400000 / 65536) = 7 latencies.
  t.inter = LinkParams{15.0, 0.001, "test"};
  const double big = 100000, sliced = 3 * (7 * 15.0 + 4 * big / 1.0) + (2 * 8 + 12) * big * copy;
  EXPECT_NEAR(predictUs("bruck", Coll::kAllToAll, size_t(8 * big), t, 1 << 19), sliced, 1e-6 * sliced);
}

// On one host a broadcast into outputs beyond the cache (its root touching
// twice the bytes: input and output) takes the chain among the tree's ties:
// its root sends each slice and copies it into place at once. Not in place,
// not below the threshold, not where it is unknown, not across hosts.
TEST(CostModel, BroadcastBeyondTheCacheTakesTheChainAmongTies) {
  for (int n : {2, 3}) {
    Topology one = Topology::singleNode(n);
    one.intra = LinkParams{1.0, 5.0, "test"};
    CollArgs args;
    args.coll = Coll::kBroadcast;
    args.nranks = n;
    args.count = size_t(4) << 20;  // 16 MiB of float32
    args.topo = &one;
    const std::string unknown = buildCollectivePlan(args, OpDesc{}, Config{}).algorithm;
    args.streamedOutputBytes = size_t(32) << 20;  // 2 x 16 MiB: at the threshold
    const std::string beyond = buildCollectivePlan(args, OpDesc{}, Config{}).algorithm;
    EXPECT_EQ(beyond, "chain") << n << " ranks";
    if (n == 2) EXPECT_EQ(unknown, "tree") << "the model ties them on 2 ranks; the tree comes first";
    args.streamedOutputBytes = (size_t(32) << 20) + 1;
    EXPECT_EQ(buildCollectivePlan(args, OpDesc{}, Config{}).algorithm, unknown) << n << " ranks, below the threshold";
    args.streamedOutputBytes = 1;
    args.inPlace = true;
    EXPECT_EQ(buildCollectivePlan(args, OpDesc{}, Config{}).algorithm, unknown) << n << " ranks, in place";
  }
  Topology two = cluster(2, 1);
  CollArgs args;
  args.coll = Coll::kBroadcast;
  args.nranks = 2;
  args.count = size_t(4) << 20;
  args.topo = &two;
  const std::string unknown = buildCollectivePlan(args, OpDesc{}, Config{}).algorithm;
  args.streamedOutputBytes = 1;
  EXPECT_EQ(buildCollectivePlan(args, OpDesc{}, Config{}).algorithm, unknown) << "across hosts the model decides";
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
                 Name{Coll::kAllToAll, "pairwise", "pairwise"},
                 Name{Coll::kAllToAll, "bruck", "bruck"},
                 Name{Coll::kAllToAll, "recursive_doubling", "bruck"},
                 Name{Coll::kAllToAll, "tree", "bruck"}}) {
    args.coll = x.coll;
    cfg.algo = x.forced;
    EXPECT_EQ(buildCollectivePlan(args, OpDesc{}, cfg).algorithm, x.built) << collName(x.coll) << " " << x.forced;
  }
}

}  // namespace
}  // namespace strata
