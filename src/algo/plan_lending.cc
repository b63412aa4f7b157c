// Which flows may lend their bytes (Flow::lends): a transport that lends
// (shm single copy) lets the peer read them from this rank's buffer some time
// after the flow finished, up to the end of the operation, so they must not
// change before then. A flow lends when no flow of a later phase writes any
// byte it sends. Flows of one phase never write what another of the same
// phase sends (that would race over any transport). Strided flows count as
// their whole span. Point-to-point plans never lend: a send there may have to
// finish before its receiver even posts the receive.
// A lending flow after which this rank receives nothing (a broadcast's root,
// a reduce's leaf) or whose rank's next receive reduces (an exchange of
// partial sums) is also marked Flow::lendingSavesOneCopy: the transport
// weighs lending there against one user copy, not two (single_copy.h). What
// counts is the rank's next receiving phase, not the flow's own phase: a
// send-only phase followed by plain receives (a ring all-gather's first step,
// a pipeline's first chunk) goes straight on to receive.
// Such a send in a collective that reduces nothing is also marked
// Flow::lendingShared: its receiver copies plain bytes, and may share the copy.
// A lending flow of a phase that also receives from its out-peer is marked
// Flow::peerReadsMeanwhile.
#include <algorithm>
#include <set>

#include "algo/byte_ranges.h"

namespace strata {

void Plan::markLending() {
  sendExtent = recvExtent = 0;
  auto extend = [&](Ref r, const Flow& f, size_t stride) {
    if (r.buf == Buf::kSend) sendExtent = std::max(sendExtent, spanOf(r, f, stride).end);
    if (r.buf == Buf::kRecv) recvExtent = std::max(recvExtent, spanOf(r, f, stride).end);
  };
  for (Flow& f : flows) {
    f.lends = f.lendingSavesOneCopy = f.lendingShared = f.peerReadsMeanwhile = false;
    extend(f.src, f, f.srcStride);
    extend(f.dst, f, f.dstStride);
  }
  if (ops.empty() || ops[0].coll == Coll::kSend || ops[0].coll == Coll::kRecv) return;
  ByteRanges later[4];  // per Buf: bytes written by the phases after the current one
  auto safe = [&](Ref r, const Flow& f, size_t stride) {
    return !r.valid() || !later[size_t(r.buf)].overlaps(spanOf(r, f, stride));
  };
  bool oneCopy = true;  // no receive from here on, or the next one reduces
  const Coll coll = ops[0].coll;
  const bool plainBytes = coll == Coll::kBroadcast || coll == Coll::kAllGather || coll == Coll::kAllToAll;
  for (size_t p = phases.size(); p-- > 0;) {
    const Phase& ph = phases[p];
    std::set<int> sources;  // the peers this phase receives from
    bool reduces = false;
    for (uint32_t i = ph.first; i < ph.first + ph.count; ++i)
      if (flows[i].kind == FlowKind::kRecv && flows[i].bytes > 0) {
        sources.insert(flows[i].peer);
        reduces |= flows[i].reduce;
      }
    if (!sources.empty()) oneCopy = reduces;
    for (uint32_t i = ph.first; i < ph.first + ph.count; ++i) {
      Flow& f = flows[i];
      if (f.bytes == 0) continue;
      if (f.kind == FlowKind::kSend) f.lends = safe(f.src, f, f.srcStride);
      else if (f.forwardPeer >= 0) f.lends = safe(f.src, f, f.srcStride) && safe(f.dst, f, f.dstStride);
      // A received value forwarded: its receiver gets what this rank got,
      // and reduces where it reduced.
      f.lendingSavesOneCopy = f.lends && (f.kind == FlowKind::kRecv ? f.reduce : oneCopy);
      f.lendingShared = f.lendingSavesOneCopy && f.kind == FlowKind::kSend && plainBytes;
      f.peerReadsMeanwhile = f.lends && sources.count(outPeerOf(f)) > 0;
    }
    for (uint32_t i = ph.first; i < ph.first + ph.count; ++i) {
      const Flow& f = flows[i];
      if (f.kind != FlowKind::kSend && f.dst.valid() && f.bytes) later[size_t(f.dst.buf)].add(spanOf(f.dst, f, f.dstStride));
    }
  }
}

}  // namespace strata
