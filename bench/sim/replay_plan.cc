#include "replay_plan.h"

#include <stdexcept>


namespace strata::sim {

ReplayPlan toReplayPlan(const Plan& plan) {
  ReplayPlan r;
  r.flows.reserve(plan.flows.size());
  std::vector<int32_t> kept;  // a flow's index in its replayed phase (-1: not replayed)
  for (const Phase& ph : plan.phases) {
    const size_t phaseStart = r.flows.size();
    kept.assign(ph.count, -1);
    // A phase's local copies that send nothing on are one copy of their total
    // bytes: the replay runs a phase's copies at once, sharing the rank's
    // core, so they end together either way. (Bruck's all-to-all lays out its
    // n blocks in n copies: on 512 x 8 ranks, one activity each took 22 GB.)
    long plainCopy = -1;
    for (uint32_t i = ph.first; i < ph.first + ph.count; ++i) {
      const Flow& f = plan.flows[i];
      if (f.bytes == 0) continue;  // only a descriptor: no time worth replaying
      const bool plain = f.kind == FlowKind::kCopy && f.forwardPeer < 0 && f.trails < 0;
      if (plain && plainCopy >= 0) {
        ReplayFlow& merged = r.flows[size_t(plainCopy)];
        merged.bytes += f.bytes;
        if (f.dst.valid() && !copiesOntoItself(f)) merged.localCopyBytes += f.bytes;
        kept[i - ph.first] = int32_t(plainCopy - long(phaseStart));
        continue;
      }
      if (plain) plainCopy = long(r.flows.size());
      kept[i - ph.first] = int32_t(r.flows.size() - phaseStart);
      ReplayFlow x;
      if (f.trails >= 0) {
        x.trails = kept[size_t(f.trails)];  // a flow with bytes trails one with as many
        if (x.trails < 0 || plan.flows[ph.first + uint32_t(f.trails)].kind != FlowKind::kRecv ||
            f.kind == FlowKind::kCopy)
          throw std::runtime_error("strata-sim replays Sends and Recvs that trail a Recv only");
      }
      x.kind = f.kind;
      x.bytes = f.bytes;
      x.reduce = f.reduce && f.kind == FlowKind::kRecv;
      if (f.kind != FlowKind::kCopy) x.peer = f.peer;
      if (f.kind != FlowKind::kSend) x.forward = f.forwardPeer;
      if (f.kind == FlowKind::kCopy && f.dst.valid() && !copiesOntoItself(f)) x.localCopyBytes = f.bytes;
      const bool sends = f.kind == FlowKind::kSend || f.forwardPeer >= 0;
      x.taperTo = f.kind != FlowKind::kRecv ? f.taperTo : 0;
      x.rampsUp = f.rampsUp && f.kind == FlowKind::kSend;
      if (sends)
        r.fragments += x.taperTo   ? fragmentCount(f.bytes, x.taperTo)
                       : x.rampsUp ? rampedFragmentCount(f.bytes)
                                   : (f.bytes + kMaxFragment - 1) / kMaxFragment;
      r.flows.push_back(x);
    }
    r.phaseEnd.push_back(uint32_t(r.flows.size()));
  }
  return r;
}

void appendPlan(ReplayPlan& into, const ReplayPlan& more) {
  const uint32_t base = uint32_t(into.flows.size());
  into.flows.insert(into.flows.end(), more.flows.begin(), more.flows.end());
  for (uint32_t end : more.phaseEnd) into.phaseEnd.push_back(base + end);
  into.fragments += more.fragments;
}

}  // namespace strata::sim
