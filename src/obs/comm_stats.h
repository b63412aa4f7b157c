// Running totals of one communicator for strataCommGetStats: per collective
// (calls, bytes, time, time waiting for peers, bus bytes) and per transport
// (links, bytes each way, time of the operations that used it). Updated once
// per operation by the thread running it, with plain loads and stores, each
// entry under its own sequence lock (obs/seq_lock.h), the open run of
// repeated tiny calls under one more around them all: a reader on any thread
// sees the totals whole (never half an operation in them, never a run
// counted twice). A reader whose copy keeps being overtaken by a writer in
// a tight loop asks that writer for a copy instead (the snapshot below).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "obs/op_record.h"
#include "obs/seq_lock.h"
#include "strata/strata.h"

namespace strata {

class CommStats {
 public:
  // `liveTries`: how many copies a reader makes while the writer overtakes
  // them before it asks the writer for a snapshot (tests make it small).
  explicit CommStats(int nranks, int liveTries = 100000) : nranks_(nranks), liveTries_(liveTries) {}
  // Writer only. `transportOf[p]`: transport id of the link to peer p (or
  // >= strataNumTransports: none yet), for the `nranks` peers.
  void add(const OpFacts& r, const Plan* plan, const std::atomic<uint8_t>* transportOf, size_t nranks);
  // Writer only: a repeated tiny call, done (Observer::endRepeated): what
  // add() derives from the record and the plan, `facts` worked out once.
  // It is counted in the open run of repeats (RepeatRun) when it is one
  // more call of the run's plan; an untimed call without waits then costs
  // one counter. A call of another plan folds the run into the totals first.
  void addRepeated(const RepeatFacts& facts, uint32_t timeWeight, uint64_t startTick, uint64_t endTick,
                   int64_t waitUs) {
    if (facts.key == run_.key && !timeWeight && !waitUs) run_.calls.add(1);
    else addRepeatedInFull(facts, timeWeight, startTick, endTick, waitUs);
  }
  // Any thread.
  void linkOpened(unsigned transport);
  // The totals, with the times (kept in opclock ticks) in seconds. Any
  // thread; it returns once a copy was whole: its own, or the writer's
  // snapshot when the writer kept overtaking it.
  strataStats_t totals() const;
  // How many snapshots the writer made for starved readers (for tests).
  uint64_t snapshotsServed() const { return snapshotsServed_.load(std::memory_order_acquire); }
  // A table for STRATA_STATS=1.
  static std::string summary(const strataStats_t& t, const std::string& who);

 private:
  // Bus bytes and seconds are made from these when read (the bus factor
  // depends only on the collective and the rank count).
  struct alignas(64) CollTotals {
    SeqLock lock;
    SingleWriterCounter<uint64_t> calls, failed, bytes, ticks, waitUs;
    uint64_t lastTimedTicks = ~uint64_t(0);  // writer only: the last timed call's own time
  };
  struct alignas(64) TransportTotals {
    SeqLock lock;
    SingleWriterCounter<uint64_t> bytesSent, bytesReceived, ticks;
    std::atomic<uint64_t> links{0};  // counted by whichever thread opens a link
  };
  // Writer only: the time `r` adds to collective c's totals. A timed tiny call
  // stands for the untimed ones before it (OpFacts::timeWeight) at the smaller
  // of its own time and the timed call's before it: one call preempted by
  // the scheduler is not counted kTinyTimedEvery times.
  static uint64_t weightedTicks(CollTotals& c, uint32_t timeWeight, uint64_t startTick, uint64_t endTick);
  // Writer only: one finished or failed call into collective c's totals.
  static void addToColl(CollTotals& c, bool failed, uint64_t bytes, uint64_t ticks, int64_t waitUs);
  // Writer only: one operation's bytes and time into transport t's totals.
  void addToTransport(unsigned t, uint64_t sent, uint64_t received, uint64_t ticks);
  // addRepeated's other case: a timed call, one that waited, or a new run.
  void addRepeatedInFull(const RepeatFacts& facts, uint32_t timeWeight, uint64_t startTick, uint64_t endTick,
                         int64_t waitUs);
  // The open run of repeats of one compiled tiny plan: its calls, and their
  // time and waits, not yet in the totals. A reader adds them in
  // (totals() reads everything under the run's lock, so that a run folded
  // meanwhile is counted once). An untimed call adds to `calls` alone,
  // outside the lock: a call without time is whole on its own.
  struct alignas(64) RepeatRun {
    SeqLock lock;
    uint64_t key = 0;  // writer only: RepeatFacts::key (0: no run)
    std::atomic<unsigned> coll{0}, transport{strataNumTransports};
    std::atomic<uint64_t> bytes{0}, sent{0}, received{0};  // of one call
    SingleWriterCounter<uint64_t> calls, ticks, waitUs;
  };
  // The totals as they stand, copied under the locks in up to `tries`
  // attempts; false if a writer overtook every one (`t` then torn).
  bool readLive(strataStats_t& t, int tries) const;
  // The totals without the open run; false if an entry was never copied whole.
  bool foldedTotals(strataStats_t& t, double secondsPerTick) const;
  // Writer only, after each write: a snapshot if a reader asked for one.
  void serveSnapshot() {
    if (snapshotsWanted_.load(std::memory_order_relaxed) != snapshotsServed_.load(std::memory_order_relaxed))
      publishSnapshot();
  }
  void publishSnapshot();
  // Reader: the writer's last snapshot, if copied whole.
  bool readSnapshot(strataStats_t& t) const;
  // Writer only: the run's calls into the totals; a new run for `facts`.
  void foldRun(const RepeatFacts& facts);
  const int nranks_;
  const int liveTries_;
  CollTotals coll_[strataNumStatColls];
  TransportTotals transport_[strataNumTransports];
  RepeatRun run_;
  // The snapshot for starved readers: a reader takes a ticket (wanted), the
  // writer copies the totals at its next write (its own copy is never
  // overtaken) and says how many tickets it has answered (served). Words of
  // relaxed atomics under a sequence lock, so that TSan can check it.
  static constexpr size_t kSnapshotWords = (sizeof(strataStats_t) + 7) / 8;
  mutable std::atomic<uint64_t> snapshotsWanted_{0};
  std::atomic<uint64_t> snapshotsServed_{0};
  alignas(64) SeqLock snapshotLock_;
  std::atomic<uint64_t> snapshot_[kSnapshotWords] = {};
};

}  // namespace strata
