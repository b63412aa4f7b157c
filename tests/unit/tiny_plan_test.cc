// The tiny path's parts that need no processes (src/exec/tiny_run.h): which
// calls are timed and what each timed call stands for, how statistics and
// the flight recorder take untimed calls, which plans it refuses, and a
// peer's descriptor cut short.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "algo/algorithms.h"
#include "core/config.h"
#include "core/error.h"
#include "exec/tiny_run.h"
#include "obs/comm_stats.h"
#include "obs/flight_recorder.h"
#include "obs/op_clock.h"
#include "support/mem_links.h"

namespace strata {
namespace {

// The first call is timed, then one in kTinyTimedEvery; the weights of the
// timed calls add up to every call made up to the last timed one, and a
// call timed anyway (its checks read the clock) closes the run early.
TEST(TinyTiming, OneCallInSixteenIsTimedAndStandsForTheCallsBeforeIt) {
  TinyPlan* tiny = nullptr;
  std::shared_ptr<TinyPlan> plan;
  {
    Plan empty;
    empty.ops.push_back(OpDesc{});
    test::MemFabric fabric(1, 4096, 4);
    test::MemLinkSet links(fabric, 0);
    plan = compileTinyPlan(links, empty);  // no flows: tiny, whatever the links
    ASSERT_TRUE(plan);
    tiny = plan.get();
  }
  std::vector<uint32_t> weights;
  for (int call = 0; call < 50; ++call) weights.push_back(nextTinyTimeWeight(*tiny, false));
  uint64_t total = 0;
  for (int call = 0; call < 50; ++call) {
    const bool timed = call % int(kTinyTimedEvery) == 0;
    EXPECT_EQ(weights[size_t(call)] != 0, timed) << "call " << call;
    if (timed) EXPECT_EQ(weights[size_t(call)], call == 0 ? 1u : kTinyTimedEvery) << "call " << call;
    total += weights[size_t(call)];
  }
  EXPECT_EQ(total, 49u);  // calls 0..48: the last timed call is call 48
  // Two untimed calls, then one timed by its checks: it stands for three.
  EXPECT_EQ(nextTinyTimeWeight(*tiny, true), 2u);  // call 50 (calls 49 and 50)
  EXPECT_EQ(nextTinyTimeWeight(*tiny, false), 0u);
  EXPECT_EQ(nextTinyTimeWeight(*tiny, false), 0u);
  EXPECT_EQ(nextTinyTimeWeight(*tiny, true), 3u);
}

// A timed call's time counts `timeWeight` times (the untimed calls before it
// at the smaller of its time and the timed call's before it); an untimed one
// counts its call and bytes but no time.
TEST(TinyTiming, StatisticsScaleTheTimedCallsAndCountEveryCall) {
  CommStats stats(2);
  OpFacts f;
  f.desc.coll = Coll::kAllReduce;
  f.desc.count = 2;
  f.bytes = 8;
  f.state = OpState::kDone;
  const uint64_t tick = uint64_t(opclock::ticksPerUs());  // about 1 us of ticks
  f.startTick = 1000;
  f.endTick = 1000 + 3 * tick;
  f.timeWeight = 1;
  stats.add(f, nullptr, nullptr, 0);
  f.startTick = f.endTick = 0;
  f.timeWeight = 0;
  for (int i = 0; i < 15; ++i) stats.add(f, nullptr, nullptr, 0);
  f.startTick = 5000;
  f.endTick = 5000 + 2 * tick;
  f.timeWeight = 16;
  stats.add(f, nullptr, nullptr, 0);
  const strataCollStats_t ar = stats.totals().coll[strataStatAllReduce];
  EXPECT_EQ(ar.calls, 17u);
  EXPECT_EQ(ar.bytes, 17u * 8);
  EXPECT_NEAR(ar.seconds, (3 + 2 * 16) * 1e-6, 1e-6);
  // A timed call preempted for 400 us: the 15 before it count at 2 us each,
  // and so do the 15 before the next timed call (2 us again).
  f.startTick = 9000;
  f.endTick = 9000 + 400 * tick;
  stats.add(f, nullptr, nullptr, 0);
  f.startTick = 900000;
  f.endTick = 900000 + 2 * tick;
  stats.add(f, nullptr, nullptr, 0);
  EXPECT_NEAR(stats.totals().coll[strataStatAllReduce].seconds, (3 + 2 * 16 + 400 + 2 * 15 + 2 * 16) * 1e-6, 1e-6);
}

// An untimed record says so in a dump, where a timed one has its times.
TEST(TinyTiming, ADumpShowsUntimedCallsAsNotTimed) {
  FlightRecorder rec(4);
  OpFacts f;
  f.desc.coll = Coll::kBroadcast;
  f.desc.count = 2;
  f.algorithm = "tree";
  f.state = OpState::kDone;
  f.id = rec.nextId();
  f.desc.seq = 1;
  f.startTick = opclock::now();
  f.endTick = f.startTick + 100;
  rec.publishStart(f);
  f.id = rec.nextId();
  f.desc.seq = 2;
  f.startTick = f.endTick = 0;
  f.timeWeight = 0;
  rec.publishStart(f);
  std::vector<OpRecord> ops = rec.snapshot();
  ASSERT_EQ(ops.size(), 2u);
  const std::string text = FlightRecorder::format("dump", {}, ops, 0, nowUs());
  const size_t second = text.find("Broadcast #2");
  ASSERT_NE(second, std::string::npos) << text;
  EXPECT_NE(text.find("(not timed)", second), std::string::npos) << text;
  EXPECT_EQ(text.find("(not timed)"), text.find("(not timed)", second)) << text;  // only the second
}

// Plans the tiny path refuses: links other than shm (here in-memory ones),
// flows larger than a tiny packet, fused operations.
TEST(TinyPlans, OnlyOnePacketFlowsOverShmAreCompiled) {
  const int n = 2;
  test::MemFabric fabric(n, 4096, 8);
  test::MemLinkSet links(fabric, 0);
  links.connect({1});
  CollArgs a;
  a.coll = Coll::kAllReduce;
  a.nranks = n;
  a.count = 2;
  a.chunkBytes = 1 << 16;
  Config cfg;
  OpDesc d;
  d.coll = Coll::kAllReduce;
  d.count = 2;
  Plan small = buildCollectivePlan(a, d, cfg);
  EXPECT_FALSE(compileTinyPlan(links, small)) << "in-memory links taken for shm";
  Plan local;  // one rank: copies only, no link
  local.ops.push_back(d);
  Flow copy;
  copy.kind = FlowKind::kCopy;
  copy.src = Ref{Buf::kSend, 0};
  copy.dst = Ref{Buf::kRecv, 0};
  copy.bytes = kTinyPacketBytes;
  local.add(copy);
  EXPECT_TRUE(compileTinyPlan(links, local));
  local.flows[0].bytes = kTinyPacketBytes + 1;
  EXPECT_FALSE(compileTinyPlan(links, local)) << "a flow larger than a tiny packet";
  local.flows[0].bytes = 8;
  local.ops[0].fusedTensors = 3;
  EXPECT_FALSE(compileTinyPlan(links, local)) << "a fused operation";
}

// A peer whose packet starts with a padded descriptor but ends before its 32
// bytes (strata never writes one): strataRemoteError naming the peer, not the
// next packet's bytes taken for the values.
TEST(TinyPlans, ADescriptorCutShortIsThePeersError) {
  test::MemFabric fabric(2, 4096, 4, "shm");  // posing as shm, the only links the tiny path takes
  test::MemLinkSet me(fabric, 0), peer(fabric, 1);
  me.connect({1});
  peer.connect({0});
  OpDesc d;
  d.coll = Coll::kBroadcast;
  d.dtype = strataFloat32;
  d.count = 16;
  d.root = 1;
  Plan plan;
  plan.ops.push_back(d);
  Flow recv;
  recv.kind = FlowKind::kRecv;
  recv.peer = 1;
  recv.dst = Ref{Buf::kRecv, 0};
  recv.bytes = 64;  // more than kOpDescUnpaddedValues: a padded descriptor in front
  recv.expectsDesc = true;
  plan.add(recv);
  std::shared_ptr<TinyPlan> tiny = compileTinyPlan(me, plan);
  ASSERT_TRUE(tiny);
  uint8_t desc[kOpDescPaddedBytes];
  encodeOpDesc(d, desc, true);
  const size_t cut = kOpDescPaddedBytes - 4;
  Span s = peer.channel(0).acquireSend(cut);
  ASSERT_GE(s.size, cut);
  std::memcpy(s.data, desc, cut);
  peer.channel(0).commitSend(cut);
  std::vector<float> values(16, 2.5f), out(16, 0.0f);
  s = peer.channel(0).acquireSend(64);
  ASSERT_GE(s.size, size_t(64));
  std::memcpy(s.data, values.data(), 64);
  peer.channel(0).commitSend(64);
  Buffers b;
  b.recv = out.data();
  try {
    runTinyPlan(me, *tiny, plan, b, nullptr);
    FAIL() << "a descriptor cut short was taken, and the next packet for the values";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), strataRemoteError) << e.what();
    EXPECT_NE(std::string(e.what()).find("rank 1 sent a 32-byte operation descriptor in a 28-byte packet"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace strata
