// The flight recorder: the last N operations of one communicator (what, how
// big, which algorithm, state, timestamps, what a long wait is waiting for),
// kept in memory and written out on a timeout, an abort or SIGUSR1, so that
// a hung job says where each rank is. Not locked itself: the Observer holds
// its lock around every call, so a dump from another thread is safe.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "obs/op_record.h"

namespace strata {

class FlightRecorder {
 public:
  explicit FlightRecorder(size_t capacity) : ring_(capacity) {}
  bool enabled() const { return !ring_.empty(); }
  // The record for a new operation (the oldest one's slot, reused; with no
  // capacity a scratch record), its id set. The caller fills the rest.
  OpRecord& start();
  // The record of operation `id` while it is still held; null otherwise.
  OpRecord* find(uint64_t id);
  // Oldest first.
  std::vector<OpRecord> snapshot() const;

  // The text of a dump: a header line, `context` lines, then one line per
  // operation. `steadyToWallUs` converts steady-clock times to wall-clock.
  static std::string format(const std::string& header, const std::vector<std::string>& context,
                            const std::vector<OpRecord>& ops, int64_t steadyToWallUs,
                            int64_t nowSteadyUs);

 private:
  std::vector<OpRecord> ring_;
  OpRecord scratch_;  // the record when the ring has no capacity
  uint64_t next_ = 1;
  size_t newest_ = 0;  // ring_ slot of the newest record: (next_ - 1) % ring_.size()
};

}  // namespace strata
