// The flight recorder: the last N operations of one communicator (what, how
// big, which algorithm, state, timestamps, what a long wait is waiting for),
// kept in memory and written out on a timeout, an abort or SIGUSR1, so that
// a hung job says where each rank is. Thread-safe: the operation's thread
// writes while a dump may read from another.
#pragma once

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "obs/op_record.h"

namespace strata {

class FlightRecorder {
 public:
  explicit FlightRecorder(size_t capacity) : ring_(capacity) {}
  bool enabled() const { return !ring_.empty(); }
  // Records the start of an operation; returns its id.
  uint64_t begin(const OpRecord& r);
  void finish(uint64_t id, OpState state, int64_t endUs, int64_t waitUs, const std::string& note);
  // Notes what the running operation `id` waits for.
  void note(uint64_t id, const std::string& note);
  // Oldest first.
  std::vector<OpRecord> snapshot() const;

  // The text of a dump: a header line, `context` lines, then one line per
  // operation. `steadyToWallUs` converts steady-clock times to wall-clock.
  static std::string format(const std::string& header, const std::vector<std::string>& context,
                            const std::vector<OpRecord>& ops, int64_t steadyToWallUs,
                            int64_t nowSteadyUs);

 private:
  OpRecord* find(uint64_t id);
  mutable std::mutex mu_;
  std::vector<OpRecord> ring_;
  uint64_t next_ = 1;
};

}  // namespace strata
