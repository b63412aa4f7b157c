// The tiny path's parts that need no processes (src/exec/tiny_run.h): which
// calls are timed and what each timed call stands for, how statistics and
// the flight recorder take untimed calls, which plans it refuses, and a
// peer's descriptor cut short.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
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

// The facts of a finished tree broadcast of two elements, as the records
// below publish them.
OpFacts doneBroadcastOfTwo() {
  OpFacts f;
  f.desc.coll = Coll::kBroadcast;
  f.desc.count = 2;
  f.algorithm = "tree";
  f.state = OpState::kDone;
  return f;
}

// An untimed record says so in a dump, where a timed one has its times.
TEST(TinyTiming, ADumpShowsUntimedCallsAsNotTimed) {
  FlightRecorder rec(4);
  OpFacts f = doneBroadcastOfTwo();
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

// A run of repeats of one tiny call is one record (FlightRecorder::
// publishRepeat): seq first to last, its count of calls, the first timed
// call's start and the last one's end, its waits summed. Any other record
// ends the run; a repeat after it, or a call of another plan, opens a new
// one; and a long run does not push older records out.
TEST(TinyRuns, RepeatsOfOneCallAreOneRecordUntilAnotherRecord) {
  FlightRecorder rec(8);
  OpFacts f = doneBroadcastOfTwo();
  f.bytes = 8;
  f.id = rec.nextId();
  f.desc.seq = 1;
  rec.publishStart(f);
  OpDesc d = f.desc;
  for (uint64_t seq = 2; seq <= 101; ++seq) {  // timed: 5, 21, ..., 101
    d.seq = seq;
    const bool timed = seq % 16 == 5;
    rec.publishRepeat(7, d, "tree", 8, timed ? seq * 100 : 0, timed ? seq * 100 + 9 : 0, seq == 50 ? 3 : 0);
  }
  f.id = rec.nextId();
  f.desc.seq = 102;
  rec.publishStart(f);
  for (uint64_t seq = 103; seq <= 104; ++seq) {
    d.seq = seq;
    rec.publishRepeat(7, d, "tree", 8, 0, 0, 0);
  }
  OpDesc other = d;
  other.coll = Coll::kAllReduce;
  for (uint64_t seq = 105; seq <= 1104; ++seq) {
    other.seq = seq;
    rec.publishRepeat(8, other, "ring", 16, 0, 0, 0);
  }
  const std::vector<OpRecord> ops = rec.snapshot();
  ASSERT_EQ(ops.size(), 5u);
  for (size_t i = 0; i < ops.size(); ++i) EXPECT_EQ(ops[i].id, i + 1);
  EXPECT_EQ(ops[0].repeats, 1u);
  EXPECT_EQ(ops[0].desc.seq, 1u);
  const OpRecord& run = ops[1];
  EXPECT_EQ(run.repeats, 100u);
  EXPECT_EQ(run.firstSeq, 2u);
  EXPECT_EQ(run.desc.seq, 101u);
  EXPECT_EQ(run.startTick, 500u);
  EXPECT_EQ(run.endTick, 10109u);
  EXPECT_EQ(run.waitUs, 3);
  EXPECT_EQ(run.state, OpState::kDone);
  EXPECT_EQ(run.bytes, 8u);
  EXPECT_EQ(ops[2].repeats, 1u);
  EXPECT_EQ(ops[2].desc.seq, 102u);
  EXPECT_EQ(ops[3].repeats, 2u);
  EXPECT_EQ(ops[3].firstSeq, 103u);
  EXPECT_EQ(ops[3].desc.seq, 104u);
  EXPECT_EQ(ops[3].startTick, 0u);
  EXPECT_EQ(ops[4].repeats, 1000u);
  EXPECT_EQ(ops[4].desc.coll, Coll::kAllReduce);
  EXPECT_STREQ(ops[4].algorithm, "ring");
  const std::string text = FlightRecorder::format("dump", {}, ops, 0, nowUs());
  EXPECT_NE(text.find("Broadcast #2-#101 (100 calls)"), std::string::npos) << text;
  const size_t pair = text.find("Broadcast #103-#104 (2 calls)");
  ASSERT_NE(pair, std::string::npos) << text;
  EXPECT_NE(text.find("(not timed)", pair), std::string::npos) << text;
  EXPECT_NE(text.find("AllReduce #105-#1104 (1000 calls)"), std::string::npos) << text;
}

// Statistics of runs of repeats (CommStats::addRepeated) equal those of the
// same calls counted one by one by the general path (CommStats::add, from
// the record and the plan), read while a run is open and after calls of
// other plans folded runs into the totals.
TEST(TinyRuns, StatisticsOfRunsEqualThoseOfEachCall) {
  CommStats runs(3), each(3);
  runs.linkOpened(strataTransportShm);
  each.linkOpened(strataTransportShm);
  std::atomic<uint8_t> transportOf[3];
  for (auto& t : transportOf) t = strataTransportShm;
  struct Call {
    RepeatFacts facts;
    Plan plan;
    Coll coll;
  };
  auto call = [](uint64_t key, Coll coll, strataStatColl_t stat, uint64_t bytes, uint64_t sent, uint64_t received) {
    Call c;
    c.facts.key = key;
    c.facts.coll = stat;
    c.facts.bytes = bytes;
    c.facts.transport = strataTransportShm;
    c.facts.sent = sent + 5;
    c.facts.received = received + 2;
    c.plan.peers = {1, 2};
    c.plan.bytesTo = {sent, 5};
    c.plan.bytesFrom = {received, 2};
    c.coll = coll;
    return c;
  };
  const Call allReduce = call(1, Coll::kAllReduce, strataStatAllReduce, 12, 8, 8);
  const Call reduce = call(2, Coll::kReduce, strataStatReduce, 20, 20, 0);
  uint64_t seq = 0;
  // Each read converts ticks to seconds with the clock's rate measured
  // afresh (opclock::ticksPerUs), over the span since the library loaded.
  // In a process of its own this test starts about 1 ms after that, where
  // two rates differ by up to a few 1e-4; after 50 ms, by under 1e-5 (reads
  // are under a microsecond wide). Times are then compared to a thousandth,
  // far below what one call counted wrongly changes.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto near = [](double x) { return 1e-3 * x; };
  auto expectEqual = [&](const char* when) {
    const strataStats_t a = runs.totals(), b = each.totals();
    for (int i = 0; i < strataNumStatColls; ++i) {
      EXPECT_EQ(a.coll[i].calls, b.coll[i].calls) << when << ", entry " << i;
      EXPECT_EQ(a.coll[i].bytes, b.coll[i].bytes) << when << ", entry " << i;
      EXPECT_NEAR(a.coll[i].seconds, b.coll[i].seconds, near(b.coll[i].seconds)) << when << ", entry " << i;
      EXPECT_DOUBLE_EQ(a.coll[i].waitSeconds, b.coll[i].waitSeconds) << when << ", entry " << i;
      EXPECT_DOUBLE_EQ(a.coll[i].busBytes, b.coll[i].busBytes) << when << ", entry " << i;
    }
    const strataTransportStats_t &x = a.transport[strataTransportShm], &y = b.transport[strataTransportShm];
    EXPECT_EQ(x.bytesSent, y.bytesSent) << when;
    EXPECT_EQ(x.bytesReceived, y.bytesReceived) << when;
    EXPECT_NEAR(x.seconds, y.seconds, near(y.seconds)) << when;
  };
  // `n` repeats of `c`, the first timed and then one in kTinyTimedEvery
  // (standing for the calls since the last timed one), the third waiting.
  auto repeat = [&](const Call& c, int n) {
    for (int i = 0; i < n; ++i) {
      const uint32_t weight = i == 0 ? 1 : i % int(kTinyTimedEvery) == 0 ? kTinyTimedEvery : 0;
      const uint64_t start = weight ? 1000 + 37 * uint64_t(i) : 0, end = weight ? start + 50 + uint64_t(i) : 0;
      const int64_t waitUs = i == 2 ? 7 : 0;
      runs.addRepeated(c.facts, weight, start, end, waitUs);
      OpFacts f;
      f.desc.coll = c.coll;
      f.desc.seq = ++seq;
      f.bytes = c.facts.bytes;
      f.state = OpState::kDone;
      f.timeWeight = weight;
      f.startTick = start;
      f.endTick = end;
      f.waitUs = waitUs;
      each.add(f, &c.plan, transportOf, 3);
    }
  };
  repeat(allReduce, 40);
  expectEqual("an open run of 40");
  repeat(reduce, 3);
  expectEqual("a run of 3 of another plan");
  repeat(allReduce, 17);
  repeat(reduce, 1);
  repeat(allReduce, 35);
  expectEqual("five runs");
  EXPECT_EQ(runs.totals().coll[strataStatAllReduce].calls, 92u);
  EXPECT_EQ(runs.totals().coll[strataStatReduce].calls, 4u);
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
