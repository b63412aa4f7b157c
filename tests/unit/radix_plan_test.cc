// The radix-k reduce-scatter / all-gather (algo/radix_blocks.h) and
// hier_radix, without processes:
//  - the radices offered per team size (the cost model picks one);
//  - the step patterns for every team of 1..64 (and some up to 200) and radix 2..8
//    and every radix offered for it, walked
//    symbolically: every block reaches every member once (all-gather), every
//    member's contribution reaches each block's owner once (reduce-scatter),
//    both partners of a message agree on it, and the step count is
//    ceil(log_k t);
//  - hier_radix plans at scale: few flows, the minimal bytes over each
//    node's link (hier_plan_test.cc checks results against the reference on
//    every world of 1..17 ranks x 1..4 per node);
//  - the cost model charges one latency per exchange phase the plan has;
//  - the selector offers hier_radix only where the network's gap is known and
//    ranks do not outnumber their machine's CPUs.
#include <gtest/gtest.h>

#include <set>

#include "algo/algorithms.h"
#include "algo/cost_model.h"
#include "algo/log_blocks.h"
#include "algo/radix_blocks.h"
#include "algo/select.h"
#include "topo/topology.h"

namespace strata {
namespace {

int stepsFor(int t, int radix) {
  int s = 0;
  for (long long reach = 1; reach < t; reach *= radix) ++s;
  return s;
}

TEST(Radix, CandidatesOnePerStepCountEachWithTheFewestPartners) {
  EXPECT_EQ(radixCandidates(1), (std::vector<int>{2}));
  EXPECT_EQ(radixCandidates(2), (std::vector<int>{2}));
  EXPECT_EQ(radixCandidates(3), (std::vector<int>{3, 2}));
  EXPECT_EQ(radixCandidates(8), (std::vector<int>{8, 3, 2}));           // one step of 7, two of 2, three of 1
  EXPECT_EQ(radixCandidates(17), (std::vector<int>{17, 5, 3, 2}));      // 5 x 5 >= 17; 3^4 too, but 3^3 already
  EXPECT_EQ(radixCandidates(4096), (std::vector<int>{64, 16, 8, 6, 4, 3, 2}));
  EXPECT_EQ(radixFor(4096), 64);  // two steps of 63 partners
  EXPECT_EQ(radixFor(4097), 17);  // three steps
  for (int t = 2; t <= 5000; ++t) {
    const std::vector<int> ks = radixCandidates(t);
    ASSERT_EQ(stepsFor(t, ks.front()), stepsFor(t, kMaxRadix)) << t;
    ASSERT_EQ(ks.back(), 2) << t;
    for (size_t i = 0; i < ks.size(); ++i) {
      ASSERT_LE(ks[i], kMaxRadix) << t;
      ASSERT_TRUE(ks[i] == 2 || stepsFor(t, ks[i] - 1) > stepsFor(t, ks[i])) << t << " k" << ks[i];
      if (i > 0) ASSERT_GT(stepsFor(t, ks[i]), stepsFor(t, ks[i - 1])) << t;
    }
  }
}

// Whether the peer of message `out`, sent by `me` in step s, receives exactly
// its blocks from me in that step (all[m]: member m's steps).
// Team sizes the symbolic walks cover: every one up to 64, then a few larger
// ones around powers of the radixes (the walks are quadratic in t; under the
// sanitizers every size up to 200 took two minutes).
std::vector<int> teamSizes() {
  std::vector<int> ts;
  for (int t = 1; t <= 64; ++t) ts.push_back(t);
  for (int t : {80, 81, 100, 125, 127, 128, 129, 200}) ts.push_back(t);
  return ts;
}

// The radices walked for a team of t: 2..8, every candidate the cost model
// may take for it, and one-step radices (t - 1 partners, and more than t).
std::vector<int> radicesFor(int t) {
  std::set<int> ks;
  for (int k = 2; k <= 8; ++k) ks.insert(k);
  for (int k : radixCandidates(t)) ks.insert(k);
  for (int k : {t - 1, t, t + 1, kMaxRadix})
    if (k >= 2 && k <= kMaxRadix) ks.insert(k);
  return {ks.begin(), ks.end()};
}

bool peerReceivesThem(const std::vector<std::vector<RadixStep>>& all, size_t s, int me, const RadixTransfer& out) {
  for (const RadixTransfer& in : all[size_t(out.peer)][s].recvs)
    if (in.peer == me) return in.blocks == out.blocks;
  return false;
}

// Every member's view of every step, checked against the others'.
TEST(Radix, AllGatherStepsDeliverEveryBlockOnce) {
  for (int t : teamSizes())
    for (int k : radicesFor(t)) {
      std::vector<std::vector<RadixStep>> all;
      for (int me = 0; me < t; ++me) all.push_back(radixAllGatherSteps(t, me, k));
      std::vector<std::set<int>> held(static_cast<size_t>(t));
      for (int me = 0; me < t; ++me) held[size_t(me)].insert(me);
      for (size_t s = 0; s < all[0].size(); ++s) {
        std::vector<std::set<int>> next = held;
        for (int me = 0; me < t; ++me) {
          const RadixStep& st = all[size_t(me)][s];
          ASSERT_EQ(st.sends.size(), st.recvs.size());
          ASSERT_LE(st.sends.size(), size_t(k - 1));
          for (const RadixTransfer& out : st.sends) {
            for (int q : out.blocks) ASSERT_TRUE(held[size_t(me)].count(q)) << t << " k" << k << " sends unheld " << q;
            ASSERT_TRUE(peerReceivesThem(all, s, me, out)) << t << " k" << k;
          }
          for (const RadixTransfer& in : st.recvs)
            for (int q : in.blocks)
              ASSERT_TRUE(next[size_t(me)].insert(q).second) << t << " k" << k << " block " << q << " twice";
        }
        held = next;
      }
      ASSERT_EQ(int(all[0].size()), stepsFor(t, k)) << t << " k" << k;
      for (int me = 0; me < t; ++me) ASSERT_EQ(int(held[size_t(me)].size()), t) << t << " k" << k;
    }
}

TEST(Radix, ReduceScatterStepsSumEveryContributionOnce) {
  for (int t : teamSizes())
    for (int k : radicesFor(t)) {
      std::vector<std::vector<RadixStep>> all;
      for (int me = 0; me < t; ++me) all.push_back(radixReduceScatterSteps(t, me, k));
      // contributors[me][q]: whose data my partial of block q holds.
      std::vector<std::vector<std::set<int>>> contributors(static_cast<size_t>(t),
                                                           std::vector<std::set<int>>(static_cast<size_t>(t)));
      for (int me = 0; me < t; ++me)
        for (int q = 0; q < t; ++q) contributors[size_t(me)][size_t(q)].insert(me);
      for (size_t s = 0; s < all[0].size(); ++s) {
        auto next = contributors;
        for (int me = 0; me < t; ++me)
          for (const RadixTransfer& out : all[size_t(me)][s].sends) {
            ASSERT_TRUE(peerReceivesThem(all, s, me, out)) << t << " k" << k;
            for (int q : out.blocks)
              for (int c : contributors[size_t(me)][size_t(q)])
                ASSERT_TRUE(next[size_t(out.peer)][size_t(q)].insert(c).second)
                    << t << " k" << k << ": " << c << "'s data reaches block " << q << " twice";
          }
        contributors = next;
      }
      for (int me = 0; me < t; ++me)
        ASSERT_EQ(int(contributors[size_t(me)][size_t(me)].size()), t) << t << " k" << k << " member " << me;
    }
}

Topology cluster(int nodes, int perNode) {
  std::vector<long long> ids;
  for (int m = 0; m < nodes; ++m)
    for (int i = 0; i < perNode; ++i) ids.push_back(m);
  Topology t = Topology::fromNodeIds(ids);
  t.intra = LinkParams{1, 100, "test"};
  t.inter = LinkParams{15, 50, "test"};
  return t;
}

Plan planFor(const Topology& t, Coll coll, int rank, size_t count, size_t chunk) {
  CollArgs a;
  a.coll = coll;
  a.rank = rank;
  a.nranks = t.nranks();
  a.count = count;
  a.topo = &t;
  a.chunkBytes = chunk;
  Config cfg;
  cfg.algo = "hier_radix";
  return buildCollectivePlan(a, OpDesc{}, cfg);
}

// At scale a plan stays small: per step across nodes one message per
// partner (at most two ranges each, the cyclic wrap), inside a node one flow
// per ring step.
TEST(Radix, HierRadixPlansStaySmallAtScale) {
  for (int nodes : {64, 200, 512, 4096}) {
    const int per = nodes == 4096 ? 1 : 8;
    Topology t = cluster(nodes, per);
    for (Coll coll : {Coll::kReduceScatter, Coll::kAllGather})
      for (int r : {0, 7, t.nranks() - 1}) {
        const int k = hierRadixFor(coll, collectiveBytes(coll, 3, 4, t.nranks()), t, 1 << 20);
        const int steps = stepsFor(nodes, k);
        EXPECT_EQ(k, radixFor(nodes)) << nodes;  // a few bytes: the fewest latencies
        Plan p = planFor(t, coll, r, 3, 1 << 20);
        ASSERT_EQ(p.algorithm, "hier_radix");
        // The stage inside the node runs beside the exchange (node_fanout.h,
        // node_fanin.h): per step each range goes to or comes from the node's others.
        const size_t fanOut = size_t(steps * 4 * (k - 1) * (per - 1) + 2 * (per - 1));
        EXPECT_LE(p.flows.size(), size_t(steps * 4 * (k - 1) + 3 * (per - 1) + 3) + fanOut)
            << collName(coll) << " " << nodes << "x" << per << " rank " << r;
      }
  }
}

// One more microsecond of network latency costs the predicted time one per
// phase of the plan that sends across nodes (the later partners' reductions
// of a reduce-scatter step are phases without a send).
TEST(Radix, ModelChargesOneLatencyPerExchangePhase) {
  const size_t chunk = 1 << 20;
  for (int nodes : {3, 8, 9, 64, 100})
    for (Coll coll : {Coll::kReduceScatter, Coll::kAllGather})
      for (size_t count : {size_t(1000), size_t(300000)}) {
        Topology t = cluster(nodes, 2);
        t.inter.alphaUs = 100;  // the plan's radix is the model's choice on these links
        Plan p = planFor(t, coll, 0, count, chunk);
        size_t exchanges = 0;
        for (const Phase& ph : p.phases)
          for (uint32_t f = ph.first; f < ph.first + ph.count; ++f)
            if (p.flows[f].kind == FlowKind::kSend && t.nodeOf(p.flows[f].peer) != t.nodeOf(0)) {
              ++exchanges;
              break;
            }
        const size_t bytes = collectiveBytes(coll, count, 4, t.nranks());
        const double base = predictUs("hier_radix", coll, bytes, t, chunk);
        t.inter.alphaUs = 101;
        EXPECT_NEAR(predictUs("hier_radix", coll, bytes, t, chunk) - base, double(exchanges), 0.01)
            << collName(coll) << " " << nodes << " nodes, count " << count;
      }
}

// Against the log2 exchange the radix one needs ceil(log_k N) latencies
// instead of ceil(log2 N): on 4096 nodes a 64 KiB all-gather is predicted
// well under the log-step's time, and with device memory (HBM class) never
// slower at any size here. With host memory (20 GB/s) a reduce-scatter step's
// later partners' reductions, which wait for the first partner's, cost more
// than the latencies saved at 256 MiB: there the model takes one partner a
// step (radix 2), level with the log-step exchange, where 8 partners (the
// radix 4096 nodes took before the model chose it) would be slower.
TEST(Radix, FewerLatencyStepsThanLogStepAtScale) {
  Topology t = cluster(4096, 8);
  t.memoryGbps = 20;
  const size_t large = size_t(256) << 20;
  EXPECT_EQ(hierRadixFor(Coll::kReduceScatter, large, t, 4 << 20), 2);
  EXPECT_LE(predictUs("hier_radix", Coll::kReduceScatter, large, t, 4 << 20),
            1.01 * predictUs("hier_halving", Coll::kReduceScatter, large, t, 4 << 20));
  EXPECT_LT(hierRadixFor(Coll::kReduceScatter, large, t, 4 << 20),
            hierRadixFor(Coll::kReduceScatter, size_t(64) << 10, t, 4 << 20));
  t.memoryGbps = 2000;
  for (Coll coll : {Coll::kReduceScatter, Coll::kAllGather})
    for (size_t bytes : {size_t(64) << 10, size_t(16) << 20, size_t(256) << 20}) {
      const double radix = predictUs("hier_radix", coll, bytes, t, 4 << 20);
      const double log = predictUs("hier_halving", coll, bytes, t, 4 << 20);
      EXPECT_LT(radix, log) << collName(coll) << " " << bytes;
      if (bytes == (size_t(64) << 10)) EXPECT_LT(radix, 0.5 * log) << collName(coll);
    }
}

// hier_radix is offered where its extra messages are priced: the network's
// gap known (measured, configured, from a file) and every rank with a CPU of
// its own. Elsewhere it is predicted beside the others (the model tools show
// it) but never the selector's pick, even where it is predicted fastest, and
// STRATA_ALGO=hier_radix still builds it.
TEST(Radix, OfferedOnlyWhereItsMessagesArePriced) {
  Topology t = cluster(4096, 8);
  t.memoryGbps = 2000;
  const size_t bytes = size_t(64) << 10;
  auto radixOf = [](const std::vector<Prediction>& all) {
    for (const Prediction& p : all)
      if (p.algorithm == "hier_radix") return p;
    ADD_FAILURE() << "no hier_radix prediction";
    return Prediction{};
  };
  for (bool gapKnown : {false, true})
    for (bool coresShared : {false, true}) {
      t.inter.gapKnown = gapKnown;
      t.coresShared = coresShared;
      std::vector<Prediction> all = predictAll(Coll::kAllGather, bytes, t, 4 << 20);
      const Prediction radix = radixOf(all);
      for (const Prediction& p : all) EXPECT_LE(radix.us, p.us) << p.algorithm;  // the fastest predicted here
      const bool offered = gapKnown && !coresShared;
      EXPECT_EQ(radix.automatic, offered) << gapKnown << coresShared;
      EXPECT_EQ(all[pickFastest(all, true)].algorithm == "hier_radix", offered) << gapKnown << coresShared;
    }
  // A gap that makes its k-1 messages a step cost more than the steps saved:
  // offered, and not picked.
  t.inter.gapKnown = true;
  t.coresShared = false;
  t.inter.gapUs = 5;
  std::vector<Prediction> costly = predictAll(Coll::kAllGather, bytes, t, 4 << 20);
  EXPECT_TRUE(radixOf(costly).automatic);
  EXPECT_NE(costly[pickFastest(costly, true)].algorithm, "hier_radix");

  CollArgs a;
  a.coll = Coll::kAllGather;
  a.rank = 0;
  a.nranks = 16;
  a.count = 5;
  Topology small = cluster(8, 2);
  small.coresShared = true;
  a.topo = &small;
  Config cfg;
  EXPECT_NE(buildCollectivePlan(a, OpDesc{}, cfg).algorithm, "hier_radix");
  cfg.algo = "hier_radix";
  EXPECT_EQ(buildCollectivePlan(a, OpDesc{}, cfg).algorithm, "hier_radix");
  // Only forced-only candidates (none offered): the fastest of them.
  std::vector<Prediction> onlyForced = {{"a", 2.0, true, false}, {"b", 1.0, true, false}};
  EXPECT_EQ(onlyForced[pickFastest(onlyForced, true)].algorithm, "b");
}

// Ranks outnumber CPUs only where a machine's ranks cannot each have one:
// ranks sharing one CPU set count against it; distinct sets (ranks bound one
// per core) add up; ranks of other machines, or of unknown ones, do not count.
TEST(Radix, RanksOutnumberCpus) {
  auto ranks = [](int n, uint32_t kernel, uint32_t set, int cpus) {
    return std::vector<RankCpus>(size_t(n), RankCpus{kernel, set, cpus});
  };
  EXPECT_TRUE(ranksOutnumberCpus(ranks(8, 7, 3, 2)));    // the namespace clusters: 8 ranks, 2 cores
  EXPECT_FALSE(ranksOutnumberCpus(ranks(2, 7, 3, 2)));
  EXPECT_FALSE(ranksOutnumberCpus(ranks(8, 0, 3, 2)));   // machine unknown
  EXPECT_FALSE(ranksOutnumberCpus(ranks(8, 7, 3, 0)));   // CPUs unknown
  std::vector<RankCpus> bound;
  for (uint32_t core = 0; core < 8; ++core) bound.push_back(RankCpus{7, 100 + core, 1});
  EXPECT_FALSE(ranksOutnumberCpus(bound));              // one core each
  bound.push_back(RankCpus{7, 100, 1});                 // a ninth rank on core 0
  EXPECT_TRUE(ranksOutnumberCpus(bound));
  std::vector<RankCpus> twoMachines = ranks(4, 7, 3, 4);
  for (const RankCpus& r : ranks(4, 9, 3, 4)) twoMachines.push_back(r);
  EXPECT_FALSE(ranksOutnumberCpus(twoMachines));        // 4 + 4 ranks on two 4-CPU machines
  twoMachines.push_back(RankCpus{9, 3, 4});
  EXPECT_TRUE(ranksOutnumberCpus(twoMachines));
}

}  // namespace
}  // namespace strata
