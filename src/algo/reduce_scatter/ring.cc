// Ring reduce-scatter: N-1 steps; at step k a rank passes on the partial sum
// of block (rank-1-k) and, at the last step, completes its own block.
#include "algo/algorithms.h"

namespace strata {

void buildRingReduceScatter(const CollArgs& a, Plan& plan) {
  const int n = a.nranks, r = a.rank, prev = (r - 1 + n) % n, next = (r + 1) % n;
  const size_t e = plan.elemSize, blockBytes = a.count * e;
  if (n == 1) {
    plan.beginPhase();
    plan.add(copyFlow(at(Buf::kSend, 0), at(Buf::kRecv, 0), blockBytes)).finalize = true;
    return;
  }
  auto block = [&](int b) { return size_t((b % n + n) % n); };
  size_t slices = sliceCount(blockBytes, a.chunkBytes);
  for (size_t s = 0; s < slices; ++s) {
    size_t sb = blockBegin(a.count, int(slices), int(s)) * e;
    size_t len = blockBegin(a.count, int(slices), int(s) + 1) * e - sb;
    plan.beginPhase();
    plan.add(sendFlow(next, at(Buf::kSend, block(r - 1) * blockBytes + sb), len));
    for (int k = 1; k < n; ++k) {
      Flow f = recvFlow(prev, Ref{}, len);
      f.reduce = true;
      f.src = at(Buf::kSend, block(r - 1 - k) * blockBytes + sb);
      if (k == n - 1) {
        f.dst = at(Buf::kRecv, sb);
        f.finalize = true;
      } else {
        f.forwardPeer = next;
      }
      plan.beginPhase();
      plan.add(f);
    }
  }
}

}  // namespace strata
