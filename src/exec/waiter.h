// How the executor waits when no flow can move: spin briefly (latency), then
// yield the core, and after 2 ms take 50 us naps. Where ranks outnumber the
// CPUs of their machine (LinkSet::coresShared) it yields from the start: a
// spinning rank only holds back the peer it waits for, which needs the core.
// While waiting it pumps TCP links, checks every link's sockets about once a
// millisecond (a dead or aborting peer throws at once) and enforces the
// communicator's timeout. Idle time is added to the run's ExecProbe.
//
// Who reports a hang: a rank whose awaited peers have all arrived in the
// operation (they sent its descriptor or an ARRIVED frame) waits a grace
// period past the timeout, so that the ranks facing the peer that never
// arrived time out first, and their abort, which names that peer, reaches
// everyone. A rank that has waited a quarter of the timeout (at most
// a second) in a collective tells every linked peer it is in it (ARRIVED), so
// that they know it is stuck behind someone else, not absent.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>

#include "algo/plan.h"
#include "exec/exec_probe.h"

namespace strata {

class LinkSet;

// What a waiting rank waits for, for timeout messages and dumps.
struct WaitState {
  std::string text;
  bool peersArrived = false;  // every awaited peer is known to be in this operation
};

class Waiter {
 public:
  // `op`: the collective being run (announced to peers after a long wait), or null.
  Waiter(LinkSet& comm, int timeoutMs, ExecProbe* probe, const OpDesc* op);
  void progressed() {
    if (idleCount_) endIdleSpan();
  }
  void idle(const std::function<WaitState()>& describe);
  // Extra time a rank whose peers all arrived waits before timing out.
  static int64_t graceUs(int timeoutMs);
  // Whether the current wait has lasted long enough that every peer inside
  // the operation has announced itself (ARRIVED), so that a peer not seen in
  // it is known to be absent rather than merely not heard from yet.
  bool absenceIsKnown() const;

 private:
  void pollLinks(int timeoutMs);
  void endIdleSpan();
  int64_t announceAfterUs() const { return std::min<int64_t>(int64_t(timeoutMs_) * 250, 1000000); }
  LinkSet& comm_;
  int timeoutMs_;
  ExecProbe* probe_;
  const uint64_t spins_;  // pauses before the first yield (kSpins, or 0 where cores are shared)
  uint64_t idleCount_ = 0;
  int64_t idleSinceUs_ = 0;
  int64_t lastPollUs_ = 0;
  int64_t deferredUntilUs_ = 0;  // > 0: timed out, but the awaited peers arrived
  int64_t noteCount_ = 0;  // long-wait notes sent in this idle span
  const OpDesc* op_;
  bool announced_ = false;  // ARRIVED sent to every linked peer (once per operation)
};

}  // namespace strata
