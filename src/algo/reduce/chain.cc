// Pipelined chain reduce for large messages: root+1 -> root+2 -> ... -> root,
// each rank adding its contribution as the slices stream through.
#include "algo/algorithms.h"

namespace strata {

void buildChainReduce(const CollArgs& a, Plan& plan) {
  const int n = a.nranks, r = a.rank;
  const int pos = (r - a.root - 1 + 2 * n) % n;  // root is last (pos n-1)
  const int prev = (r - 1 + n) % n, next = (r + 1) % n;
  const size_t e = plan.elemSize;
  size_t slices = sliceCount(a.count * e, a.chunkBytes);
  for (size_t s = 0; s < slices; ++s) {
    size_t off = blockBegin(a.count, int(slices), int(s)) * e;
    size_t len = blockBegin(a.count, int(slices), int(s) + 1) * e - off;
    plan.beginPhase();
    if (n == 1) {
      plan.add(copyFlow(at(Buf::kSend, off), at(Buf::kRecv, off), len)).finalize = true;
    } else if (pos == 0) {
      plan.add(sendFlow(next, at(Buf::kSend, off), len));
    } else {
      Flow f = recvFlow(prev, Ref{}, len);
      f.reduce = true;
      f.src = at(Buf::kSend, off);
      if (pos == n - 1) {
        f.dst = at(Buf::kRecv, off);
        f.finalize = true;
      } else {
        f.forwardPeer = next;
      }
      plan.add(f);
    }
  }
}

}  // namespace strata
