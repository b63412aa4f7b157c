// The flight recorder and the statistics with one writer and concurrent
// readers (src/obs/seq_lock.h): a reader never sees a record or a total that
// is half written, the recorder keeps the last N records with their notes,
// and a reader facing a writer stopped mid-write gives up instead of hanging.
// The sanitizer tier runs these under ThreadSanitizer.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "obs/comm_stats.h"
#include "obs/flight_recorder.h"
#include "obs/op_clock.h"
#include "obs/seq_lock.h"

namespace strata {
namespace {

// Every field derived from the id, so that a torn record shows.
OpFacts factsOf(uint64_t id, bool done) {
  OpFacts f;
  f.id = id;
  f.desc.coll = Coll(id % 6);
  f.desc.count = id * 3;
  f.desc.seq = id;
  f.desc.root = int32_t(id % 7);
  f.bytes = id * 11;
  static const char* names[] = {"ring", "hier_halving", "recursive_doubling", "tree", "p2p"};
  f.algorithm = names[id % 5];
  f.startTick = id * 7;
  f.state = done ? OpState::kDone : OpState::kRunning;
  f.endTick = done ? id * 7 + 5 : 0;
  f.waitUs = done ? int64_t(id % 13) : 0;
  return f;
}

::testing::AssertionResult consistent(const OpRecord& r) {
  OpFacts running = factsOf(r.id, false), done = factsOf(r.id, true);
  const OpFacts& want = r.state == OpState::kDone ? done : running;
  if (r.desc.count != want.desc.count || r.desc.seq != want.desc.seq || r.desc.root != want.desc.root ||
      r.desc.coll != want.desc.coll || r.bytes != want.bytes ||
      r.startTick != want.startTick || r.endTick != want.endTick || r.waitUs != want.waitUs ||
      r.algorithm != want.algorithm)
    return ::testing::AssertionFailure() << "record " << r.id << " is torn: count " << r.desc.count
                                         << ", bytes " << r.bytes << ", end " << r.endTick
                                         << ", algorithm " << r.algorithm;
  return ::testing::AssertionSuccess();
}

TEST(FlightRecorder, KeepsTheLastRecordsOldestFirstWithTheirNotes) {
  FlightRecorder rec(5);
  for (int i = 0; i < 13; ++i) {
    uint64_t id = rec.nextId();
    rec.publishStart(factsOf(id, false));
    if (id % 2) rec.setNote(id, "note of " + std::to_string(id));
    if (id != 13) rec.publishEnd(factsOf(id, true));
  }
  std::vector<OpRecord> ops = rec.snapshot();
  ASSERT_EQ(ops.size(), 5u);
  for (size_t i = 0; i < ops.size(); ++i) {
    uint64_t id = 9 + i;
    EXPECT_EQ(ops[i].id, id);
    EXPECT_TRUE(consistent(ops[i]));
    EXPECT_EQ(ops[i].state, id == 13 ? OpState::kRunning : OpState::kDone);
    // A note belongs to its operation only: slot reuse does not carry an older one over.
    EXPECT_EQ(ops[i].note, id % 2 ? "note of " + std::to_string(id) : std::string());
  }
  FlightRecorder none(0);
  EXPECT_FALSE(none.enabled());
  none.publishStart(factsOf(none.nextId(), true));
  none.setNote(1, "ignored");
  EXPECT_TRUE(none.snapshot().empty());
}

// The writer's pace: the cheapest real operation takes ~0.1 us (one rank,
// 8 bytes), so a writer never publishes faster than that.
void paceLikeAnOperation() {
  static const uint64_t kTicks = uint64_t(opclock::ticksPerUs() / 10) + 1;
  const uint64_t until = opclock::now() + kTicks;
  while (opclock::now() < until) {
  }
}

TEST(FlightRecorder, ReadersNeverSeeAHalfWrittenRecord) {
  FlightRecorder rec(16);
  constexpr uint64_t kMinOps = 50000, kMinSnapshots = 2000;
  std::atomic<uint64_t> snapshots{0}, written{0};
  std::atomic<bool> stop{false};
  std::thread writer([&] {  // until both sides have done enough, so that they overlap
    uint64_t id = 0;
    while (!stop.load(std::memory_order_relaxed) &&
           (id < kMinOps || snapshots.load(std::memory_order_relaxed) < kMinSnapshots)) {
      id = rec.nextId();
      rec.publishStart(factsOf(id, false));
      paceLikeAnOperation();
      rec.publishEnd(factsOf(id, true));
    }
    written.store(id);
    stop.store(true);
  });
  uint64_t records = 0;
  bool ok = true;
  while (ok && !stop.load()) {
    std::vector<OpRecord> ops = rec.snapshot();
    if (!ops.empty()) snapshots.fetch_add(1, std::memory_order_relaxed);  // overlapping the writer
    for (size_t i = 0; ok && i < ops.size(); ++i) {
      EXPECT_TRUE(ok = consistent(ops[i]));
      if (i) EXPECT_TRUE(ok = ok && ops[i - 1].id < ops[i].id) << ops[i - 1].id << " then " << ops[i].id;
    }
    records += ops.size();
  }
  stop.store(true);
  writer.join();
  ASSERT_TRUE(ok);
  std::vector<OpRecord> last = rec.snapshot();
  ASSERT_EQ(last.size(), 16u);
  EXPECT_EQ(last.back().id, written.load());
  EXPECT_EQ(last.front().id, written.load() - 15);
  EXPECT_GE(snapshots.load(), kMinSnapshots);
  std::printf("%llu snapshots (%llu records) taken while the writer wrote %llu\n",
              (unsigned long long)snapshots.load(), (unsigned long long)records,
              (unsigned long long)written.load());
}

TEST(FlightRecorder, StatisticsReadWhileWrittenAreNeverHalfAnOperation) {
  CommStats stats(4);  // all-gather bus factor 3/4
  Plan plan;
  plan.peers = {1, 2};
  plan.bytesTo = {100, 7};
  plan.bytesFrom = {30, 9};
  std::atomic<uint8_t> transportOf[3];
  transportOf[0] = strataNumTransports;
  transportOf[1] = strataTransportShm;
  transportOf[2] = strataTransportTcp;
  stats.linkOpened(strataTransportShm);
  constexpr uint64_t kMinOps = 50000, kMinReads = 2000, kBytes = 4096;
  std::atomic<uint64_t> reads{0}, written{0};
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    uint64_t i = 0;
    for (; !stop.load(std::memory_order_relaxed) &&
           (i < kMinOps || reads.load(std::memory_order_relaxed) < kMinReads);
         ++i) {
      OpFacts f = factsOf(i + 1, true);
      f.desc.coll = Coll::kAllGather;
      f.bytes = kBytes;
      f.startTick = 1000 * i;
      f.endTick = 1000 * i + 10;
      f.waitUs = 0;
      paceLikeAnOperation();
      stats.add(f, &plan, transportOf, 3);
    }
    written.store(i);
    stop.store(true);
  });
  // Each entry whole: an operation is 4096 bytes (3072 on the bus), sends 100
  // and receives 30 bytes over shm, 7 and 9 over TCP.
  auto whole = [&](const strataStats_t& t) {
    const strataCollStats_t& c = t.coll[strataStatAllGather];
    const strataTransportStats_t& shm = t.transport[strataTransportShm];
    const strataTransportStats_t& tcp = t.transport[strataTransportTcp];
    return c.bytes == c.calls * kBytes && c.busBytes == double(c.calls * kBytes) * 0.75 &&
           shm.bytesSent / 100 * 30 == shm.bytesReceived && tcp.bytesSent / 7 * 9 == tcp.bytesReceived &&
           shm.links == 1 && t.coll[strataStatAllReduce].calls == 0;
  };
  bool ok = true;
  while (ok && !stop.load()) {
    strataStats_t t = stats.totals();
    EXPECT_TRUE(ok = whole(t)) << "calls " << t.coll[strataStatAllGather].calls << ", bytes "
                               << t.coll[strataStatAllGather].bytes;
    if (t.coll[strataStatAllGather].calls) reads.fetch_add(1, std::memory_order_relaxed);  // overlapping the writer
  }
  stop.store(true);
  writer.join();
  ASSERT_TRUE(ok);
  strataStats_t t = stats.totals();
  EXPECT_TRUE(whole(t));
  EXPECT_EQ(t.coll[strataStatAllGather].calls, written.load());
  EXPECT_EQ(t.coll[strataStatAllGather].failed, 0u);
  EXPECT_EQ(t.transport[strataTransportShm].bytesSent, written.load() * 100);
  EXPECT_GE(reads.load(), kMinReads);
}

// Runs of repeated tiny calls (CommStats::addRepeated) read while written:
// the open run counts once, never also after it was folded into the totals
// by a call of another plan. The writer alternates runs of an all-reduce
// plan (8 bytes, sends 8 over shm) and a broadcast plan (12 bytes, sends 4),
// one call in 16 timed; every read must add up and never count fewer calls
// than the read before it. `liveTries`: CommStats' copies before a reader
// asks the writer for a snapshot; the writer goes on until `minSnapshots`
// were served (or 60 s passed). Returns how many were.
uint64_t readRunsWhileWritten(int liveTries, uint64_t minSnapshots) {
  CommStats stats(2, liveTries);
  stats.linkOpened(strataTransportShm);
  RepeatFacts ar, bc;
  ar.key = 1;
  ar.coll = strataStatAllReduce;
  ar.bytes = 8;
  ar.transport = strataTransportShm;
  ar.sent = ar.received = 8;
  bc.key = 2;
  bc.coll = strataStatBroadcast;
  bc.bytes = 12;
  bc.transport = strataTransportShm;
  bc.sent = 4;
  bc.received = 0;
  constexpr uint64_t kMinCalls = 200000, kMinReads = 2000;
  std::atomic<uint64_t> reads{0}, written{0};
  std::atomic<bool> stop{false};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::thread writer([&] {
    uint64_t calls = 0;
    for (uint64_t run = 0; !stop.load(std::memory_order_relaxed) &&
                           (calls < kMinCalls || reads.load(std::memory_order_relaxed) < kMinReads ||
                            (stats.snapshotsServed() < minSnapshots && std::chrono::steady_clock::now() < deadline));
         ++run) {
      const RepeatFacts& f = run % 2 ? bc : ar;
      for (uint64_t i = 0; i < 1 + run % 37; ++i, ++calls) {
        const bool timed = i % 16 == 0;
        stats.addRepeated(f, timed ? 1 : 0, timed ? 1000 : 0, timed ? 1010 : 0, 0);
      }
    }
    written.store(calls);
    stop.store(true);
  });
  auto whole = [&](const strataStats_t& t) {
    const strataCollStats_t& a = t.coll[strataStatAllReduce];
    const strataCollStats_t& b = t.coll[strataStatBroadcast];
    const strataTransportStats_t& shm = t.transport[strataTransportShm];
    return a.bytes == a.calls * 8 && b.bytes == b.calls * 12 && shm.bytesSent == a.calls * 8 + b.calls * 4 &&
           shm.bytesReceived == a.calls * 8 && shm.links == 1;
  };
  bool ok = true;
  uint64_t lastCalls = 0;
  while (ok && !stop.load()) {
    const strataStats_t t = stats.totals();
    const uint64_t calls = t.coll[strataStatAllReduce].calls + t.coll[strataStatBroadcast].calls;
    EXPECT_TRUE(ok = whole(t)) << "all-reduce calls " << t.coll[strataStatAllReduce].calls << ", broadcast calls "
                               << t.coll[strataStatBroadcast].calls << ", shm sent "
                               << t.transport[strataTransportShm].bytesSent;
    EXPECT_TRUE(ok = ok && calls >= lastCalls) << calls << " calls after " << lastCalls;
    lastCalls = calls;
    if (calls) reads.fetch_add(1, std::memory_order_relaxed);
  }
  stop.store(true);
  writer.join();
  EXPECT_TRUE(ok);
  const strataStats_t t = stats.totals();
  EXPECT_TRUE(whole(t));
  EXPECT_EQ(t.coll[strataStatAllReduce].calls + t.coll[strataStatBroadcast].calls, written.load());
  EXPECT_GE(reads.load(), kMinReads);
  return stats.snapshotsServed();
}

TEST(FlightRecorder, RunsOfRepeatsReadWhileWrittenAreNeverCountedTwice) { readRunsWhileWritten(100000, 0); }

// A reader the writer keeps overtaking (here after one copy) gets the
// writer's snapshot instead of a torn copy of its own; CI's ASan run once
// starved the reader of the test above through all its 100000 copies.
TEST(FlightRecorder, ReadersTheWriterKeepsOvertakingGetItsSnapshot) {
  EXPECT_GE(readRunsWhileWritten(1, 100), 100u);
}

TEST(FlightRecorder, AReaderGivesUpOnAWriterStoppedMidWrite) {
  SeqLock lock;
  int copies = 0;
  EXPECT_TRUE(lock.read([&] { ++copies; }));
  EXPECT_EQ(copies, 1);
  lock.beginWrite();  // and never ends it
  copies = 0;
  EXPECT_FALSE(lock.read([&] { ++copies; }, 50));
  EXPECT_EQ(copies, 50);
  lock.endWrite();
  EXPECT_TRUE(lock.read([&] {}));
}

}  // namespace
}  // namespace strata
