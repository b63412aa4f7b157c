#include "algo/compose.h"

#include <algorithm>

#include "core/error.h"

namespace strata {

namespace {

Ref rebindRef(Ref r, const Rebind& b, size_t scratchBase) {
  switch (r.buf) {
    case Buf::kSend: return Ref{b.send.buf, b.send.offset + r.offset};
    case Buf::kRecv: return Ref{b.recv.buf, b.recv.offset + r.offset};
    case Buf::kScratch: return Ref{Buf::kScratch, scratchBase + r.offset};
    case Buf::kNone: break;
  }
  return r;
}

}  // namespace

Ref reserveScratch(Plan& plan, size_t bytes) {
  Ref r{Buf::kScratch, plan.scratchBytes};
  plan.scratchBytes += bytes;
  return r;
}

void appendStage(Plan& plan, FlatBuilder build, const Team& team, const CollArgs& args, const Rebind& bind) {
  Plan sub;
  sub.elemSize = plan.elemSize;
  sub.dtype = plan.dtype;
  sub.redop = plan.redop;
  sub.nranks = team.size();
  CollArgs a = args;
  a.rank = team.me;
  a.nranks = team.size();
  // In place when the rebound buffers coincide, or when the caller's buffers
  // are one (args.inPlace) and the stage reads and writes them at one offset.
  a.inPlace = sameRef(bind.send, bind.recv) ||
              (args.inPlace && bind.send.buf == Buf::kSend && bind.recv.buf == Buf::kRecv &&
               bind.send.offset == bind.recv.offset);
  build(a, sub);
  const size_t scratchBase = plan.scratchBytes;
  plan.scratchBytes += sub.scratchBytes;
  auto global = [&](int p) { return p < 0 ? p : team.members[size_t(p)]; };
  for (const Phase& ph : sub.phases) {
    bool begun = false;
    std::vector<int32_t> placed(ph.count, -1);  // a flow's index in the outer phase (Flow::trails)
    int32_t added = 0;
    for (uint32_t i = ph.first; i < ph.first + ph.count; ++i) {
      Flow f = sub.flows[i];
      if (f.trails >= 0) {
        f.trails = placed[size_t(f.trails)];
        if (f.trails < 0) throw Error(strataInternalError, "a stage's flow trails a flow that rebinding dropped");
      }
      f.peer = global(f.peer);
      f.forwardPeer = global(f.forwardPeer);
      f.src = rebindRef(f.src, bind, scratchBase);
      f.dst = rebindRef(f.dst, bind, scratchBase);
      if (!bind.keepFinalize) f.finalize = false;
      if (copiesOntoItself(f)) {  // rebinding made it a copy onto itself
        if (f.forwardPeer < 0 && !f.finalize) continue;
        if (f.forwardPeer >= 0) f.dst = Ref{};  // only the forward is left (an in-place finalize stays)
      }
      if (!begun) plan.beginPhase();
      begun = true;
      plan.add(f);
      placed[i - ph.first] = added++;
    }
  }
}

}  // namespace strata
