// Everything a communicator records about its operations: the flight
// recorder (last N operations, dumped on timeout / abort / SIGUSR1), the
// totals behind strataCommGetStats (STRATA_STATS=1 prints them at destroy),
// and the trace (STRATA_TRACE_FILE). runCollective / runP2P call begin() and
// end() around each plan; with tracing off the cost is two reads of the
// operation clock (obs/op_clock.h) and two uncontended lock exchanges per
// operation.
#pragma once

#include <cstdint>
#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "core/config.h"
#include "exec/exec_probe.h"
#include "obs/comm_stats.h"
#include "obs/flight_recorder.h"

namespace strata {

class Topology;
class TraceSink;

// The observer's lock: taken twice per operation and almost never contended
// (only a dump from another thread competes), so a spin lock: one atomic
// exchange to take, one store to release.
class SpinLock {
 public:
  void lock() {
    while (locked_.exchange(true, std::memory_order_acquire))
      while (locked_.load(std::memory_order_relaxed)) __builtin_ia32_pause();
  }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

struct ObserverIdentity {
  int rank = 0, nranks = 1;
  uint64_t commTag = 0;
};

class Observer : public LongWaitSink {
 public:
  Observer(const ObserverIdentity& who, const Config& config, const Topology* topo);
  ~Observer() override;
  bool tracing() const { return trace_ != nullptr; }

  // Around one operation: `probe` is filled by the executor in between.
  uint64_t begin(const Plan& plan, bool p2p);
  void end(uint64_t id, const Plan& plan, const ExecProbe& probe, const char* error);
  void longWait(const std::string& whatItWaitsFor) override;

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
  ObserverIdentity who_;
  const Config& config_;
  const Topology* topo_;
  int64_t steadyToWallUs_;
  mutable SpinLock mu_;  // everything below: recorder_, stats_, transportOf_, current_
  FlightRecorder recorder_;
  CommStats stats_;
  std::vector<uint8_t> transportOf_;  // per peer; strataNumTransports = no link yet
  uint64_t current_ = 0;              // the running operation's id (0: none)
  TraceSink* trace_ = nullptr;
  int traceTid_ = 0;
};

}  // namespace strata
