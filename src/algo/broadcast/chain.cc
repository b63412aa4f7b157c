// Pipelined chain broadcast for large messages: root -> root+1 -> ... with
// the data cut into slices, so all links carry slices at the same time.
#include "algo/algorithms.h"

namespace strata {

void buildChainBroadcast(const CollArgs& a, Plan& plan) {
  const int n = a.nranks, r = a.rank;
  const int pos = (r - a.root + n) % n;
  const int prev = (r - 1 + n) % n, next = (r + 1) % n;
  const size_t e = plan.elemSize;
  size_t slices = sliceCount(a.count * e, a.chunkBytes);
  for (size_t s = 0; s < slices; ++s) {
    size_t off = blockBegin(a.count, int(slices), int(s)) * e;
    size_t len = blockBegin(a.count, int(slices), int(s) + 1) * e - off;
    plan.beginPhase();
    if (pos == 0) {
      Flow f = copyFlow(at(Buf::kSend, off), at(Buf::kRecv, off), len);
      if (a.inPlace) f.dst = Ref{};
      if (n > 1) f.forwardPeer = next;
      plan.add(f);
    } else {
      Flow f = recvFlow(prev, at(Buf::kRecv, off), len);
      if (pos < n - 1) f.forwardPeer = next;
      plan.add(f);
    }
  }
}

}  // namespace strata
