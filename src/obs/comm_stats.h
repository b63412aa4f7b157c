// Running totals of one communicator for strataCommGetStats: per collective
// (calls, bytes, time, time waiting for peers, bus bytes) and per transport
// (links, bytes each way, time of the operations that used it). Updated once
// per operation by the thread running it, with plain loads and stores, each
// entry under its own sequence lock (obs/seq_lock.h): a reader on any thread
// sees every entry whole (never half an operation in it), and a copy of one
// cache line is short enough not to be starved by a writer in a tight loop.
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
  explicit CommStats(int nranks) : nranks_(nranks) {}
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
  // The totals, with the times (kept in opclock ticks) in seconds.
  strataStats_t totals() const;
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
  // The totals without the open run.
  strataStats_t foldedTotals(double secondsPerTick) const;
  // Writer only: the run's calls into the totals; a new run for `facts`.
  void foldRun(const RepeatFacts& facts);
  const int nranks_;
  CollTotals coll_[strataNumStatColls];
  TransportTotals transport_[strataNumTransports];
  RepeatRun run_;
};

}  // namespace strata
