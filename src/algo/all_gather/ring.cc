// Ring all-gather: each rank copies its block into place and streams it to the
// next rank; N-1 steps later every block has gone around the ring.
#include "algo/algorithms.h"

namespace strata {

void buildRingAllGather(const CollArgs& a, Plan& plan) {
  const int n = a.nranks, r = a.rank, prev = (r - 1 + n) % n, next = (r + 1) % n;
  const size_t e = plan.elemSize, blockBytes = a.count * e;
  auto block = [&](int b) { return size_t((b % n + n) % n); };
  size_t slices = sliceCount(blockBytes, a.chunkBytes);
  for (size_t s = 0; s < slices; ++s) {
    size_t sb = blockBegin(a.count, int(slices), int(s)) * e;
    size_t len = blockBegin(a.count, int(slices), int(s) + 1) * e - sb;
    Flow own = copyFlow(at(Buf::kSend, sb), at(Buf::kRecv, block(r) * blockBytes + sb), len);
    if (a.inPlace) own.dst = Ref{};  // already in place: only stream it on
    if (n > 1) own.forwardPeer = next;
    plan.beginPhase();
    plan.add(own);
    for (int j = 0; j < n - 1; ++j) {
      Flow f = recvFlow(prev, at(Buf::kRecv, block(r - 1 - j) * blockBytes + sb), len);
      if (j < n - 2) f.forwardPeer = next;
      // Two ranks: the receive forwards nothing and goes the other way on
      // the one link, so it shares the send's phase, and each rank reads the
      // peer's slice while its own is read (as the log-step exchange does).
      if (n > 2) plan.beginPhase();
      plan.add(f);
    }
  }
}

}  // namespace strata
