#include "exec/phase_wait.h"

#include <string>

#include "core/error.h"
#include "exec/link_set.h"

namespace strata {

void checkPeerDescriptor(LinkSet& links, const OpDesc& mine, int peer, const uint8_t* bytes) {
  OpDesc theirs;
  if (!decodeOpDesc(bytes, &theirs))
    fail(strataMismatch, "rank %d expected %s from rank %d but received data that is not an "
                         "operation header (rank %d is running a different operation)",
         links.rank(), mine.describe().c_str(), peer, peer);
  theirs.seq = widenSeq(mine.seq, theirs.seq);
  links.noteArrival(peer, theirs);
  if (!descMatches(mine, theirs))
    fail(strataMismatch, "mismatch: rank %d called %s but rank %d called %s", links.rank(),
         mine.describe().c_str(), peer, theirs.describe().c_str());
}

WaitState describePhaseWait(LinkSet& links, const Plan& plan, const Phase& ph,
                            const std::function<FlowProgress(uint32_t)>& progress,
                            bool absenceIsKnown) {
  const OpDesc* mine = plan.ops.empty() ? nullptr : &plan.ops[0];
  WaitState w;
  w.text = format("was in %s (%s) waiting for", mine ? mine->describe().c_str() : "?",
                  plan.algorithm.c_str());
  bool allArrived = true, any = false;
  std::string absent;
  auto peerState = [&](int peer) {
    const OpDesc* seen = links.lastSeen(peer);
    bool collective = mine && mine->coll != Coll::kSend && mine->coll != Coll::kRecv;
    bool arrived = collective && ((seen && seen->seq != 0 && seen->seq >= mine->seq) ||
                                  links.channel(peer).announcedSeq() >= mine->seq);
    any = true;
    allArrived &= arrived;
    if (arrived) return std::string(" (it is in this operation too)");
    if (!mine || mine->coll == Coll::kSend || mine->coll == Coll::kRecv) return std::string();
    // Neither its descriptor nor an ARRIVED frame (which a peer waiting in
    // the operation sends after a quarter of the timeout) came.
    std::string verdict = format(absenceIsKnown ? "rank %d never arrived" : "rank %d was not seen in it yet", peer);
    if (absent.find(verdict) == std::string::npos)
      absent += seen && seen->seq
                    ? format("%s: the last operation seen from it was %s; ", verdict.c_str(), seen->describe().c_str())
                    : format("%s: nothing was received from it yet; ", verdict.c_str());
    return std::string();
  };
  for (uint32_t i = 0; i < ph.count; ++i) {
    const FlowProgress p = progress(i);
    if (p.finished) continue;
    const Flow& f = plan.flows[ph.first + i];
    std::string done = format(" (%zu of %zu bytes done)", p.done, f.bytes);
    if (f.kind == FlowKind::kRecv)
      w.text += format(" data from rank %d%s%s;", f.peer, done.c_str(), peerState(f.peer).c_str());
    const int out = outPeerOf(f);
    if (out >= 0) w.text += format(" rank %d to take data%s%s;", out, done.c_str(), peerState(out).c_str());
  }
  w.peersArrived = any && allArrived;
  if (!w.text.empty() && w.text.back() == ';') w.text.pop_back();
  if (!absent.empty()) {
    absent.resize(absent.size() - 2);
    w.text += "; " + absent;
  } else if (!w.peersArrived) {
    w.text += " (that rank never called it, or is stuck)";
  }
  return w;
}

}  // namespace strata
