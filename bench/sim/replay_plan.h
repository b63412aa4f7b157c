// What strata-sim replays of one rank's Plan: per flow only what decides
// timing (who sends how many bytes to whom, what is reduced, what is
// forwarded, what is copied locally), a few bytes per flow, so that the plans
// of 32768 ranks fit in memory together. Built from the library's own Plan
// (src/algo/plan.h), never from a description of the algorithm.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "algo/plan.h"

namespace strata::sim {

struct ReplayFlow {
  int32_t peer = -1;         // Send: destination; Recv: source; Copy: -1
  int32_t forward = -1;      // Recv / Copy: where the value streams on (-1: nowhere)
  uint64_t bytes = 0;
  uint64_t localCopyBytes = 0;  // Copy: bytes written locally (0: none, or a copy onto itself)
  int32_t trails = -1;       // Send / Recv: the Recv of its phase (index from the phase's first flow) whose value it uses as it lands
  FlowKind kind = FlowKind::kCopy;
  bool reduce = false;       // Recv: the incoming bytes are reduced into the value
  uint32_t taperTo = 0;      // Send / Copy: its last packets get smaller, down to this (Flow::taperTo)
  bool rampsUp = false;      // Send: its first packets are smaller (Flow::rampsUp)
};

struct ReplayPlan {
  std::vector<ReplayFlow> flows;
  std::vector<uint32_t> phaseEnd;  // phase p holds flows [phaseEnd[p-1], phaseEnd[p])
  // Messages the replay will send: each flow's bytes cut as the executor cuts them.
  uint64_t fragments = 0;
};

ReplayPlan toReplayPlan(const Plan& plan);
// `more`'s phases after `into`'s (collectives called one after the other).
void appendPlan(ReplayPlan& into, const ReplayPlan& more);

}  // namespace strata::sim
