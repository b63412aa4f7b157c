// What the executors (executor.cc, tiny_run.cc) share about the peers of a
// phase: checking the descriptor a peer sent ahead of its data, and saying
// what a waiting rank waits for (timeouts, dumps, a peer's abort).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "algo/plan.h"
#include "exec/waiter.h"

namespace strata {

class LinkSet;

// Checks the kOpDescBytes at `bytes`, received from `peer`, against this
// rank's operation `mine`: strataMismatch naming both calls unless they
// match. Notes the peer's arrival in it (LinkSet::noteArrival) either way.
void checkPeerDescriptor(LinkSet& links, const OpDesc& mine, int peer, const uint8_t* bytes);

// Where a flow of the waiting phase stands.
struct FlowProgress {
  bool finished = false;
  size_t done = 0;  // bytes
};

// What this rank waits for in phase `ph` of `plan`, and for each awaited
// peer whether it arrived in this operation (its descriptor or an ARRIVED
// frame came) or was last seen in an earlier one. `absenceIsKnown`: the
// wait lasted long enough for a peer inside the operation to announce
// itself, so one not seen in it never arrived; otherwise it has only not
// been heard from yet. `progress(i)`: the phase's i-th flow.
WaitState describePhaseWait(LinkSet& links, const Plan& plan, const Phase& ph,
                            const std::function<FlowProgress(uint32_t)>& progress,
                            bool absenceIsKnown);

}  // namespace strata
