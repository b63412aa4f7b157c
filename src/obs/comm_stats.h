// Running totals of one communicator for strataCommGetStats: per collective
// (calls, bytes, time, time waiting for peers, bus bytes) and per transport
// (links, bytes each way, time of the operations that used it). Updated once
// per operation under the observer's lock.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "obs/op_record.h"
#include "strata/strata.h"

namespace strata {

class CommStats {
 public:
  CommStats() : totals_{} {}
  // `transportOf[p]`: transport id of the link to peer p (or >= strataNumTransports).
  void add(const OpRecord& r, const Plan* plan, const std::vector<uint8_t>& transportOf);
  void linkOpened(unsigned transport);
  // The totals, with the times (kept in opclock ticks) in seconds.
  strataStats_t totals() const;
  // A table for STRATA_STATS=1.
  static std::string summary(const strataStats_t& t, const std::string& who);

 private:
  strataStats_t totals_;  // all but the times
  uint64_t collTicks_[strataNumStatColls] = {};
  uint64_t transportTicks_[strataNumTransports] = {};
};

}  // namespace strata
