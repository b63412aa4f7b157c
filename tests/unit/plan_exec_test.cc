// Plans for every collective and algorithm, run by the real executor on
// 1..17 ranks (one thread each) over bounded in-memory links with tiny slots
// and pipeline slices, so that slicing, forwarding and flow control are all
// exercised. Results are checked against the float64 / exact reference, and
// all-reduce results must be bitwise identical on every rank.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "algo/algorithms.h"
#include "algo/select.h"
#include "core/dtype.h"
#include "core/error.h"
#include "exec/executor.h"
#include "support/collective_check.h"
#include "support/plan_runner.h"
#include "support/reference.h"

namespace strata {
namespace {

struct PlanCase {
  Coll coll;
  const char* algo;  // forced STRATA_ALGO value ("" = automatic)
  bool inPlace;
};

std::string caseName(const PlanCase& c) {
  return std::string(collName(c.coll)) + "_" + (c.algo[0] ? c.algo : "auto") +
         (c.inPlace ? "_inplace" : "");
}


std::string runCase(const PlanCase& pc, int n, size_t count, strataDataType_t dtype, strataRedOp_t op,
                    int root) {
  return test::runPlanCase(pc.coll, pc.algo, pc.inPlace, n, count, dtype, op, root);
}

class PlanExec : public ::testing::TestWithParam<PlanCase> {};

TEST_P(PlanExec, CorrectOnOneToSeventeenRanks) {
  const PlanCase pc = GetParam();
  for (int n = 1; n <= 17; ++n) {
    for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(1023)}) {
      int root = (n > 2) ? n / 2 + 1 : n - 1;
      std::string err = runCase(pc, n, count, strataFloat32, strataSum, root);
      ASSERT_EQ(err, "") << caseName(pc) << " n=" << n << " count=" << count;
    }
  }
}

TEST_P(PlanExec, OtherTypesAndOpsOnOddWorlds) {
  const PlanCase pc = GetParam();
  struct TO { strataDataType_t t; strataRedOp_t op; };
  for (TO to : {TO{strataBfloat16, strataAvg}, TO{strataInt32, strataMax}, TO{strataFloat64, strataProd},
                TO{strataInt8, strataMin}, TO{strataFloat16, strataSum}})
    for (int n : {3, 5}) {
      std::string err = runCase(pc, n, 1031, to.t, to.op, n - 1);
      ASSERT_EQ(err, "") << caseName(pc) << " n=" << n << " " << dtypeName(to.t) << " " << redOpName(to.op);
    }
}

// Fusion runs plans over buffers made of pieces (src/exec/segments.h): every
// step must stop at a piece's end, on the send, receive, reduce and forward paths.
TEST_P(PlanExec, BuffersScatteredOverPieces) {
  const PlanCase pc = GetParam();
  struct TO { strataDataType_t t; strataRedOp_t op; };
  for (TO to : {TO{strataFloat32, strataSum}, TO{strataInt32, strataMax}, TO{strataFloat16, strataAvg}})
    for (int n : {2, 3, 5})
      for (size_t pieceElems : {size_t(1), size_t(13), size_t(700)}) {
        std::string err = test::runPlanCase(pc.coll, pc.algo, pc.inPlace, n, 1031, to.t, to.op, n - 1,
                                            nullptr, pieceElems);
        ASSERT_EQ(err, "") << caseName(pc) << " n=" << n << " " << dtypeName(to.t) << " pieces of ~"
                           << pieceElems;
      }
}

INSTANTIATE_TEST_SUITE_P(
    Algorithms, PlanExec,
    ::testing::Values(PlanCase{Coll::kAllReduce, "ring", false}, PlanCase{Coll::kAllReduce, "ring", true},
                      PlanCase{Coll::kAllReduce, "recursive_doubling", false},
                      PlanCase{Coll::kAllReduce, "recursive_doubling", true},
                      PlanCase{Coll::kReduceScatter, "", false}, PlanCase{Coll::kReduceScatter, "", true},
                      PlanCase{Coll::kReduceScatter, "ring", false},
                      PlanCase{Coll::kReduceScatter, "recursive_halving", false},
                      PlanCase{Coll::kReduceScatter, "recursive_halving", true},
                      PlanCase{Coll::kAllGather, "", false}, PlanCase{Coll::kAllGather, "", true},
                      PlanCase{Coll::kAllGather, "ring", true},
                      PlanCase{Coll::kAllGather, "recursive_doubling", false},
                      PlanCase{Coll::kAllGather, "recursive_doubling", true},
                      PlanCase{Coll::kBroadcast, "chain", false}, PlanCase{Coll::kBroadcast, "tree", true},
                      PlanCase{Coll::kBroadcast, "tree", false}, PlanCase{Coll::kReduce, "chain", false},
                      PlanCase{Coll::kReduce, "tree", false}, PlanCase{Coll::kReduce, "tree", true},
                      PlanCase{Coll::kAllToAll, "", false}, PlanCase{Coll::kAllToAll, "", true},
                      PlanCase{Coll::kAllToAll, "bruck", false}, PlanCase{Coll::kAllToAll, "bruck", true}),
    [](const auto& info) { return caseName(info.param); });

TEST(PlanShape, RingAllReduceMovesTwoNMinusOneOverNOfTheData) {
  for (int n : {2, 3, 8, 17}) {
    CollArgs a;
    a.coll = Coll::kAllReduce;
    a.nranks = n;
    a.count = 1 << 20;
    a.chunkBytes = 1 << 16;
    Config cfg;
    cfg.algo = "ring";
    OpDesc d;
    Plan p = buildCollectivePlan(a, d, cfg);
    size_t sent = 0;
    for (const Flow& f : p.flows)
      if (f.kind == FlowKind::kSend || f.forwardPeer >= 0) sent += f.bytes;
    double expected = 2.0 * (n - 1) / n * double(a.count * 4);
    EXPECT_NEAR(double(sent), expected, 4.0 * n * 64) << "n=" << n;
  }
}

// The arguments of `coll` over `count` elements as rank `rank` of `nranks` sees them.
CollArgs rankArgs(Coll coll, int nranks, int rank, size_t count) {
  CollArgs a;
  a.coll = coll;
  a.nranks = nranks;
  a.rank = rank;
  a.count = count;
  return a;
}

// In place, the pairwise all-to-all keeps in scratch only the blocks that
// land before (or in the step that) they are sent: in rank order the blocks
// of steps 1 to n/2, never the rank's own; every other block is sent from
// where it lies. (PlanExec checks the results.)
TEST(PlanShape, InPlacePairwiseAllToAllKeepsOnlyBlocksThatLandBeforeTheyAreSent) {
  for (int n : {2, 3, 5, 8}) {
    for (int rank = 0; rank < n; ++rank) {
      CollArgs a = rankArgs(Coll::kAllToAll, n, rank, 1001);
      a.inPlace = true;
      Plan p;
      p.elemSize = 4;
      buildPairwiseAllToAll(a, p);
      const size_t block = a.count * 4;
      std::set<size_t> keptBlocks;
      for (const Flow& f : p.flows) {
        if (f.kind == FlowKind::kCopy) {
          ASSERT_EQ(f.dst.buf, Buf::kScratch);
          ASSERT_EQ(f.bytes, block);
          keptBlocks.insert(f.src.offset / block);
        }
      }
      std::set<size_t> expected;
      for (int k = 1; k <= n / 2; ++k) expected.insert(size_t((rank - k + n) % n));
      EXPECT_EQ(keptBlocks, expected) << n << " ranks, rank " << rank;
      for (const Flow& f : p.flows)
        if (f.kind == FlowKind::kSend)
          EXPECT_EQ(f.src.buf, expected.count(size_t(f.peer)) ? Buf::kScratch : Buf::kSend) << n << " ranks, to " << f.peer;
    }
  }
}

// A flow's packets (fragmentBytes): whole kMaxFragment ones while at least
// two are left, then halves down to its taper size, so the last is small.
std::vector<size_t> packetsOf(size_t bytes, size_t tail = kTailFragment) {
  std::vector<size_t> sizes;
  for (size_t left = bytes; left > 0; left -= sizes.back()) sizes.push_back(fragmentBytes(left, tail));
  return sizes;
}

TEST(Fragments, ALargeFlowEndsInSmallerPackets) {
  constexpr size_t K = 1024;
  EXPECT_EQ(packetsOf(1 << 20), (std::vector<size_t>{256 * K, 256 * K, 256 * K, 128 * K, 64 * K, 32 * K, 32 * K}));
  EXPECT_EQ(packetsOf(256 * K), (std::vector<size_t>{128 * K, 64 * K, 32 * K, 32 * K}));
  EXPECT_EQ(packetsOf(40 * K), (std::vector<size_t>{32 * K, 8 * K}));
  EXPECT_EQ(packetsOf(32 * K), (std::vector<size_t>{32 * K}));
  EXPECT_EQ(packetsOf(32 * K, 4 * K), (std::vector<size_t>{16 * K, 8 * K, 4 * K, 4 * K}));
  EXPECT_EQ(packetsOf(1), (std::vector<size_t>{1}));
  EXPECT_TRUE(packetsOf(0).empty());
  for (size_t tail = kMinTailFragment; tail <= kTailFragment; tail *= 2)
    for (size_t bytes : std::vector<size_t>{7, 33 * K + 4, 300 * K + 12, 511 * K, 512 * K, 513 * K, (2 << 20) + 8,
                         (size_t(1) << 30) + 4 * 1000003}) {
      const std::vector<size_t> sizes = packetsOf(bytes, tail);
      EXPECT_EQ(fragmentCount(bytes, tail), sizes.size()) << bytes << " tail " << tail;
      EXPECT_LE(sizes.back(), tail) << bytes;
      for (size_t i = 0; i + 1 < sizes.size(); ++i) {
        EXPECT_LE(sizes[i], kMaxFragment) << bytes;
        EXPECT_GE(sizes[i], sizes[i + 1]) << bytes;
        EXPECT_EQ(sizes[i] % tail, 0u) << bytes;  // so every element size's multiple
      }
    }
}

// A ramped flow's packets: 32 KiB, then each as large as all before it, up
// to kMaxFragment, so the first is small and the rest soon whole.
TEST(Fragments, ARampedFlowStartsWithSmallerPackets) {
  constexpr size_t K = 1024;
  std::vector<size_t> sizes;
  for (size_t done = 0; done < (1 << 20); done += sizes.back()) sizes.push_back(rampedFragmentBytes(done));
  EXPECT_EQ(sizes, (std::vector<size_t>{32 * K, 32 * K, 64 * K, 128 * K, 256 * K, 256 * K, 256 * K}));
  EXPECT_EQ(rampedFragmentCount(1 << 20), sizes.size());
  EXPECT_EQ(rampedFragmentCount(0), 0u);
  EXPECT_EQ(rampedFragmentCount(1), 1u);
  EXPECT_EQ(rampedFragmentCount(32 * K + 1), 2u);
  EXPECT_EQ(rampedFragmentCount(64 * K + 1), 3u);
}

// The more partners send to a receiver at once, the smaller their last
// packets (all of them land as the step ends): about kTailFragment in all,
// none under kMinTailFragment.
TEST(Fragments, TheTaperShrinksWithThePartners) {
  constexpr size_t K = 1024;
  EXPECT_EQ(tailFragmentFor(1), 32 * K);
  EXPECT_EQ(tailFragmentFor(2), 16 * K);
  EXPECT_EQ(tailFragmentFor(3), 8 * K);
  EXPECT_EQ(tailFragmentFor(7), 4 * K);
  EXPECT_EQ(tailFragmentFor(63), 4 * K);
  for (size_t partners = 1; partners < 100; ++partners) {
    const size_t tail = tailFragmentFor(partners);
    EXPECT_GE(tail, kMinTailFragment);
    EXPECT_TRUE(tail * partners <= kTailFragment || tail == kMinTailFragment) << partners;
    EXPECT_EQ(tail & (tail - 1), 0u) << partners;
  }
}

}  // namespace
}  // namespace strata

namespace strata {
namespace {

// A hand-built plan's flow: with rank 1 unless it is a Copy.
Flow flowOf(FlowKind kind, Ref src, Ref dst, size_t bytes, int forward = -1) {
  Flow f;
  f.kind = kind;
  f.peer = kind == FlowKind::kCopy ? -1 : 1;
  f.src = src;
  f.dst = dst;
  f.bytes = bytes;
  f.forwardPeer = forward;
  return f;
}

// Flow::lends (plan_lending.cc): a flow lends the bytes it sends only when no
// later phase writes any of them; point-to-point plans never lend. A lending
// flow after which its rank receives nothing (in its phase or a later one),
// or whose rank's next receive reduces, saves the ring one copy, not two;
// such a send in a collective that reduces nothing may be read shared.
TEST(PlanLending, AFlowLendsOnlyBytesNoLaterPhaseWrites) {
  Plan plan;
  plan.ops.push_back(OpDesc{});
  plan.ops[0].coll = Coll::kAllGather;
  auto send = [](Buf b, size_t offset, size_t bytes) { return flowOf(FlowKind::kSend, {b, offset}, {}, bytes); };
  auto recv = [](Buf b, size_t offset, size_t bytes, int forward) {
    return flowOf(FlowKind::kRecv, {}, {b, offset}, bytes, forward);
  };
  plan.beginPhase();
  plan.add(send(Buf::kRecv, 0, 100));    // 0: overwritten by flow 4
  plan.add(send(Buf::kRecv, 200, 100));  // 1: nothing writes 200..300 later
  plan.add(send(Buf::kScratch, 0, 64));  // 2: scratch reused by flow 5 (a strided write)
  plan.beginPhase();
  plan.add(recv(Buf::kRecv, 400, 50, 2));  // 3: forwards what it received; final
  plan.add(recv(Buf::kRecv, 99, 1, -1));   // 4: writes byte 99
  Flow strided = recv(Buf::kScratch, 100, 30, -1);
  strided.runs = 3;
  strided.dstStride = 1000;  // bytes 100..110, 1100..1110, 2100..2110: spans 100..2110
  plan.add(strided);
  plan.add(send(Buf::kScratch, 64, 36));  // 6: 64..100, just before the strided write's span
  plan.beginPhase();
  plan.add(send(Buf::kSend, 0, 10));  // 7: sends after the rank's last receive
  plan.seal();
  const Plan plain = plan;
  EXPECT_FALSE(plan.flows[0].lends);
  EXPECT_TRUE(plan.flows[1].lends);
  EXPECT_TRUE(plan.flows[2].lends) << "scratch 0..64 lies before the strided span";
  EXPECT_TRUE(plan.flows[3].lends);
  EXPECT_TRUE(plan.flows[6].lends) << "a write of the same phase does not count";
  EXPECT_EQ(plan.recvExtent, 450u);
  // Phase 1 only sends, but phase 2 receives (the rank goes straight on to
  // it: not idle); phase 3 sends after the last receive (a one-way stream).
  EXPECT_FALSE(plan.flows[0].lendingSavesOneCopy) << "it does not lend at all";
  EXPECT_FALSE(plan.flows[1].lendingSavesOneCopy) << "the rank receives in the next phase";
  EXPECT_FALSE(plan.flows[2].lendingSavesOneCopy) << "the rank receives in the next phase";
  EXPECT_FALSE(plan.flows[3].lendingSavesOneCopy) << "the forwarding receiver is busy receiving";
  EXPECT_FALSE(plan.flows[6].lendingSavesOneCopy) << "its rank receives in the same phase";
  EXPECT_TRUE(plan.flows[7].lends);
  EXPECT_TRUE(plan.flows[7].lendingSavesOneCopy) << "nothing is received after it";
  // An all-gather's receivers copy plain bytes: that one-way send may be read shared.
  EXPECT_TRUE(plan.flows[7].lendingShared);
  EXPECT_FALSE(plan.flows[3].lendingShared) << "a forward, not a send";
  EXPECT_FALSE(plan.flows[1].lendingShared) << "it does not save one copy only";
  // Where phase 2's receives reduce (an exchange of partial sums), the sends
  // before them save one copy too: the receiver reads the ring as it reduces.
  plan.flows[4].reduce = true;
  plan.seal();
  EXPECT_TRUE(plan.flows[1].lendingSavesOneCopy) << "the rank's next receive reduces";
  EXPECT_TRUE(plan.flows[6].lendingSavesOneCopy) << "its own phase's receive reduces";
  EXPECT_FALSE(plan.flows[3].lendingSavesOneCopy) << "a plain forward: its receiver gets plain bytes too";
  // In a collective that reduces, a one-way send's receiver may reduce: not shared.
  plan.ops[0].coll = Coll::kReduce;
  plan.seal();
  EXPECT_TRUE(plan.flows[7].lendingSavesOneCopy);
  EXPECT_FALSE(plan.flows[7].lendingShared) << "a reduce's leaf: its receiver reduces";
  EXPECT_FALSE(plan.flows[1].lendingShared);
  plan = plain;
  // Only flow 6 sends to a peer its phase receives from (an exchange).
  EXPECT_FALSE(plan.flows[1].peerReadsMeanwhile);
  EXPECT_FALSE(plan.flows[3].peerReadsMeanwhile) << "it forwards to rank 2 and receives from rank 1";
  EXPECT_TRUE(plan.flows[6].peerReadsMeanwhile);
  plan.flows[5].dst.offset = 50;  // now it covers 50..2060, including scratch 0..64's tail
  plan.seal();
  EXPECT_FALSE(plan.flows[2].lends);
  plan.ops[0].coll = Coll::kSend;
  plan.seal();
  EXPECT_FALSE(plan.flows[1].lends) << "point-to-point plans never lend";
}

// Flow::writesFinalBytes (plan_final_writes.cc): a Recv's or a Copy's
// destination bytes are final when no flow of a later phase reads any of
// them and no flow of its own phase trails it; Sends and empty flows never.
TEST(PlanFinalWrites, AFlowWritesFinalBytesOnlyWhereNothingReadsThemLater) {
  Plan plan;
  plan.ops.push_back(OpDesc{});
  plan.ops[0].coll = Coll::kAllGather;
  const auto flow = [](FlowKind kind, Ref src, Ref dst, size_t bytes) { return flowOf(kind, src, dst, bytes); };
  const Ref none{};
  plan.beginPhase();
  plan.add(flow(FlowKind::kRecv, none, {Buf::kRecv, 0}, 100));                 // 0: phase 1 sends 50..60
  plan.add(flow(FlowKind::kRecv, none, {Buf::kRecv, 100}, 100));               // 1: nothing reads it again
  plan.add(flow(FlowKind::kCopy, {Buf::kSend, 0}, {Buf::kRecv, 200}, 100));    // 2: flow 3 trails it
  Flow trailing = flow(FlowKind::kSend, {Buf::kRecv, 200}, none, 100);         // 3: a Send
  trailing.trails = 2;
  plan.add(trailing);
  plan.beginPhase();
  plan.add(flow(FlowKind::kSend, {Buf::kRecv, 50}, none, 10));                 // 4
  Flow strided = flow(FlowKind::kRecv, none, {Buf::kScratch, 0}, 30);          // 5: runs at 0, 1000, 2000
  strided.runs = 3;
  strided.dstStride = 1000;
  plan.add(strided);
  Flow reducing = flow(FlowKind::kRecv, {Buf::kRecv, 100}, {Buf::kScratch, 5000}, 8);  // 6: reads recv 100..108
  reducing.reduce = true;
  plan.add(reducing);
  plan.beginPhase();
  plan.add(flow(FlowKind::kSend, {Buf::kScratch, 1500}, none, 10));            // 7: between flow 5's runs
  plan.add(flow(FlowKind::kRecv, none, {Buf::kRecv, 300}, 10));                // 8
  plan.add(flow(FlowKind::kRecv, none, {Buf::kRecv, 310}, 0));                 // 9: empty
  plan.seal();
  EXPECT_FALSE(plan.flows[0].writesFinalBytes) << "phase 1 sends 50..60 of it";
  EXPECT_FALSE(plan.flows[1].writesFinalBytes) << "phase 1 reduces with 100..108 of it";
  EXPECT_FALSE(plan.flows[2].writesFinalBytes) << "a flow of its phase trails it";
  EXPECT_FALSE(plan.flows[3].writesFinalBytes) << "a Send writes nothing";
  EXPECT_FALSE(plan.flows[5].writesFinalBytes) << "a strided flow counts as its whole span";
  EXPECT_TRUE(plan.flows[6].writesFinalBytes);
  EXPECT_TRUE(plan.flows[8].writesFinalBytes);
  EXPECT_FALSE(plan.flows[9].writesFinalBytes) << "an empty flow writes nothing";
  // Without the reduce that reads it, flow 1's bytes are final.
  plan.flows[6].src = {};
  plan.flows[6].reduce = false;
  plan.seal();
  EXPECT_TRUE(plan.flows[1].writesFinalBytes);
  // Read by a later phase past its end only: final.
  plan.flows[7].src = {Buf::kScratch, 2010};
  plan.seal();
  EXPECT_TRUE(plan.flows[5].writesFinalBytes);
}

// A 2-rank ring all-gather: every block this rank receives or copies lands
// in the output for good; on 4 ranks recursive doubling sends on what it
// received in every step but the last.
TEST(PlanFinalWrites, AllGatherOutputsAreFinalWhereNoLaterStepSendsThemOn) {
  for (int nranks : {2, 4}) {
    for (int rank = 0; rank < nranks; ++rank) {
      const CollArgs a = rankArgs(Coll::kAllGather, nranks, rank, 1024);
      Plan ring, doubling;
      buildRingAllGather(a, ring);
      ring.seal();
      buildRecursiveDoublingAllGather(a, doubling);
      doubling.seal();
      if (nranks == 2)
        for (const Flow& f : ring.flows)
          if (f.kind != FlowKind::kSend && f.dst.valid() && f.bytes) EXPECT_TRUE(f.writesFinalBytes) << rank;
      const Phase& last = doubling.phases.back();
      int final = 0, sentOn = 0;
      for (uint32_t i = 0; i < doubling.flows.size(); ++i) {
        const Flow& f = doubling.flows[i];
        if (f.kind != FlowKind::kRecv || !f.bytes) continue;
        const bool inLast = i >= last.first && i < last.first + last.count;
        EXPECT_EQ(f.writesFinalBytes, inLast) << nranks << " ranks, rank " << rank << ", flow " << i;
        ++(inLast ? final : sentOn);
      }
      EXPECT_GT(final, 0);
      EXPECT_EQ(sentOn > 0, nranks > 2) << "one step on 2 ranks, two on 4";
    }
  }
}

// Outputs are streamed by the bytes a call touches on its rank (bytesTouched):
// its output, and its input where that lies apart. An out-of-place 16 MiB
// all-gather on 2 ranks touches 24 MiB, in place 16 (docs/ARCHITECTURE.md,
// outputs larger than the cache).
TEST(PlanFinalWrites, OutputsStreamFromTheBytesTheCallTouches) {
  CollArgs a;
  a.coll = Coll::kAllGather;
  a.nranks = 3;
  a.rank = 1;
  a.count = 997;
  Plan p;
  buildRingAllGather(a, p);
  p.seal();
  const size_t block = p.sendExtent;  // one rank's block, in the plan's units
  ASSERT_GE(block, 997u);
  ASSERT_EQ(p.recvExtent, 3 * block);
  std::vector<uint8_t> recv(3 * block), send(block);
  EXPECT_EQ(bytesTouched(p, Buffers{send.data(), recv.data()}), 4 * block) << "out of place";
  EXPECT_EQ(bytesTouched(p, Buffers{recv.data() + block, recv.data()}), 3 * block) << "in place";
  EXPECT_EQ(bytesTouched(p, Buffers{recv.data() + 3 * block - 1, recv.data()}), 3 * block)
      << "overlapping the output's last byte";
  std::vector<uint8_t> both(4 * block);
  EXPECT_EQ(bytesTouched(p, Buffers{both.data() + 3 * block, both.data()}), 4 * block) << "right after the output";
  EXPECT_EQ(bytesTouched(p, Buffers{both.data(), both.data() + block}), 4 * block) << "right before the output";
  Segments sendPieces, recvPieces;
  sendPieces.append(send.data(), block);
  recvPieces.append(recv.data(), 3 * block);
  Buffers fused;
  fused.sendPieces = &sendPieces;
  fused.recvPieces = &recvPieces;
  EXPECT_EQ(bytesTouched(p, fused), 4 * block) << "fused pieces of their own";
  fused.sendPieces = &recvPieces;
  EXPECT_EQ(bytesTouched(p, fused), 3 * block) << "fused in place";
}

}  // namespace
}  // namespace strata
