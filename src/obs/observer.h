// Everything a communicator records about its operations: the flight
// recorder (last N operations, dumped on timeout / abort / SIGUSR1), the
// totals behind strataCommGetStats (STRATA_STATS=1 prints them at destroy),
// and the trace (STRATA_TRACE_FILE). runCollective / runP2P call begin() and
// end() around each plan, on the one thread that runs the communicator's
// operations; with tracing off the cost is two reads of the operation clock
// (obs/op_clock.h) and plain stores: no lock and no locked instruction
// (records and totals are published through sequence locks, obs/seq_lock.h).
#pragma once

#include <cstdint>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "core/config.h"
#include "exec/exec_probe.h"
#include "obs/comm_stats.h"
#include "obs/flight_recorder.h"
#include "obs/op_clock.h"

namespace strata {

class Topology;
class TraceSink;

struct ObserverIdentity {
  int rank = 0, nranks = 1;
  uint64_t commTag = 0;
};

class Observer : public LongWaitSink {
 public:
  Observer(const ObserverIdentity& who, const Config& config, const Topology* topo);
  ~Observer() override;
  bool tracing() const { return trace_ != nullptr; }

  // Around one operation, on the thread running it: `probe` is filled by
  // the executor in between. `startTick`: when the operation was called (0: now).
  // A tiny call (exec/tiny_run.h) passes `publishAtStart` false: the flight
  // recorder gets the operation in one write when it ends, or when it has
  // waited long (longWait), instead of one write at each end; and
  // `timeWeight` (OpFacts): 0 reads no clock, more than 1 counts the call's
  // time for that many calls in the statistics.
  uint64_t begin(const Plan& plan, bool p2p, uint64_t startTick = 0, bool publishAtStart = true,
                 uint32_t timeWeight = 1);
  void end(uint64_t id, const Plan& plan, const ExecProbe& probe, const char* error);

  // The tiny path's begin and end (exec/tiny_run.h), for a plan whose peers
  // are all reached over one transport: the same record and statistics as
  // begin(plan, false, startTick, false, timeWeight) and end(), with what
  // those derive from the plan at every call taken from `facts`
  // (repeatFacts, worked out once when the plan is compiled; false where the
  // peers use several transports). Nothing is written at the start: a long
  // wait (longWait) or an error fills the record as begin() would, and then
  // ends it as any other. At the end, a call that repeats the one before it
  // joins its record and its statistics (a run of repeats:
  // FlightRecorder::publishRepeat, CommStats::addRepeated).
  bool repeatFacts(const Plan& plan, RepeatFacts& facts);
  void beginRepeated(const Plan& plan, const RepeatFacts& facts, uint64_t startTick, uint32_t timeWeight) {
    repeated_ = Repeated{&plan, &facts, !timeWeight ? 0 : startTick ? startTick : opclock::now(), timeWeight};
  }
  // `error`: what made the call fail (null: it did not).
  void endRepeated(const Plan& plan, const ExecProbe& probe, const char* error);
  void longWait(const std::string& whatItWaitsFor, int64_t waitedUs) override;

  // Any thread.
  void linkOpened(int peer, unsigned transport);
  strataStats_t stats() const;
  // Writes the flight recorder (to STRATA_FLIGHT_RECORDER_FILE or stderr),
  // headed by why and by `context` lines (e.g. what each peer was last seen in).
  void dump(const std::string& why, const std::vector<std::string>& context) noexcept;
  // The STRATA_STATS=1 table.
  std::string statsSummary() const;
  std::string who() const;

 private:
  void trace(const OpRecord& r, const Plan& plan, const ExecProbe& probe);
  // running_ from the repeated call begun (beginRepeated), as begin() fills
  // it: the call becomes a record of its own.
  void fillRunningFromRepeated();
  ObserverIdentity who_;
  const Config& config_;
  const Topology* topo_;
  int64_t steadyToWallUs_;
  FlightRecorder recorder_;
  CommStats stats_;
  std::unique_ptr<std::atomic<uint8_t>[]> transportOf_;  // per peer; strataNumTransports = no link yet
  OpFacts running_;                   // the operation between begin and end (its thread only)
  bool runningPublished_ = false;     // running_ is in the flight recorder
  std::atomic<uint64_t> current_{0};  // its id while it runs (0: none)
  // A repeated call between beginRepeated and endRepeated whose running_ is
  // not filled yet (repeated_.plan null: none).
  struct Repeated {
    const Plan* plan = nullptr;
    const RepeatFacts* facts = nullptr;
    uint64_t startTick = 0;
    uint32_t timeWeight = 0;
  } repeated_;
  uint64_t repeatKeys_ = 0;  // RepeatFacts::key of the plan compiled last
  TraceSink* trace_ = nullptr;
  int traceTid_ = 0;
};

}  // namespace strata
