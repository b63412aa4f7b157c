// Which flows' writes are final (Flow::writesFinalBytes): what a Recv or a
// Copy puts in its destination is not read again by this rank in the
// operation: no flow of a later phase takes any of it as its source (to
// send, lend, reduce with or copy on), and no flow of its own phase trails
// it. The executor may then write those bytes with streaming stores, so
// that an output larger than the cache does not first read every line it
// overwrites (exec/executor.cc). What a flow forwards from its own
// destination is the executor's to know (it streams only where it does not).
// Strided flows count as their whole span.
#include <vector>

#include "algo/byte_ranges.h"

namespace strata {

void Plan::markFinalWrites() {
  ByteRanges readLater[4];  // per Buf: bytes the phases after the current one read
  for (size_t p = phases.size(); p-- > 0;) {
    const Phase& ph = phases[p];
    std::vector<bool> trailed(ph.count, false);
    for (uint32_t i = ph.first; i < ph.first + ph.count; ++i)
      if (flows[i].trails >= 0 && uint32_t(flows[i].trails) < ph.count) trailed[size_t(flows[i].trails)] = true;
    for (uint32_t i = ph.first; i < ph.first + ph.count; ++i) {
      Flow& f = flows[i];
      f.writesFinalBytes = f.kind != FlowKind::kSend && f.dst.valid() && f.bytes > 0 && !trailed[i - ph.first] &&
                           !readLater[size_t(f.dst.buf)].overlaps(spanOf(f.dst, f, f.dstStride));
    }
    for (uint32_t i = ph.first; i < ph.first + ph.count; ++i) {
      const Flow& f = flows[i];
      if (f.src.valid() && f.bytes) readLater[size_t(f.src.buf)].add(spanOf(f.src, f, f.srcStride));
    }
  }
}

}  // namespace strata
