// Ring all-reduce: a reduce-scatter around the ring followed by an all-gather,
// each block cut into pipeline slices. Bandwidth-optimal: every rank sends and
// receives 2(N-1)/N of the data. Each slice's final value is computed by one
// rank and copied to the rest, so all ranks hold bitwise identical results.
#include "algo/algorithms.h"

namespace strata {

void buildRingAllReduce(const CollArgs& a, Plan& plan) {
  const int n = a.nranks, r = a.rank, prev = (r - 1 + n) % n, next = (r + 1) % n;
  const size_t e = plan.elemSize;
  if (n == 1) {
    plan.beginPhase();
    plan.add(copyFlow(at(Buf::kSend, 0), at(Buf::kRecv, 0), a.count * e)).finalize = true;
    return;
  }
  auto block = [&](int b) { return (b % n + n) % n; };
  size_t maxBlock = a.count / size_t(n) + 1;
  size_t slices = sliceCount(maxBlock * e, a.chunkBytes);
  // Byte offset and length of slice s of block b.
  auto piece = [&](int b, size_t s, size_t* off, size_t* len) {
    size_t begin = blockBegin(a.count, n, b), blen = blockBegin(a.count, n, b + 1) - begin;
    size_t sb = blockBegin(blen, int(slices), int(s)), se = blockBegin(blen, int(slices), int(s) + 1);
    *off = (begin + sb) * e;
    *len = (se - sb) * e;
  };
  size_t off, len;
  for (size_t s = 0; s < slices; ++s) {
    piece(block(r), s, &off, &len);
    plan.beginPhase();
    plan.add(sendFlow(next, at(Buf::kSend, off), len));
    for (int k = 1; k < n; ++k) {  // reduce-scatter steps
      int b = block(r - k);
      piece(b, s, &off, &len);
      Flow f = recvFlow(prev, Ref{}, len);
      f.reduce = true;
      f.src = at(Buf::kSend, off);
      f.forwardPeer = next;
      if (k == n - 1) {
        f.dst = at(Buf::kRecv, off);
        f.finalize = true;
      }
      plan.beginPhase();
      plan.add(f);
    }
    for (int j = 0; j < n - 1; ++j) {  // all-gather steps
      piece(block(r - j), s, &off, &len);
      Flow f = recvFlow(prev, at(Buf::kRecv, off), len);
      if (j < n - 2) f.forwardPeer = next;
      plan.beginPhase();
      plan.add(f);
    }
  }
}

}  // namespace strata
