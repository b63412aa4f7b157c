// Recursive-doubling all-reduce for small messages: log2(p) exchange rounds
// among p = the largest power of two <= N. With N not a power of two, the
// first 2(N-p) ranks pair up: even ones hand their data to the odd neighbour
// before the rounds and get the result back after. Partners compute
// a(op)b and b(op)a, which are bitwise equal for commutative ops, so every
// rank ends with identical bits. Writes ping-pong between two scratch halves
// so no round overwrites data still being sent.
#include "algo/algorithms.h"
#include "algo/log_blocks.h"

namespace strata {

void buildRecursiveDoublingAllReduce(const CollArgs& a, Plan& plan) {
  const int n = a.nranks, r = a.rank;
  const size_t bytes = a.count * plan.elemSize;
  int p = 1;
  while (p * 2 <= n) p *= 2;
  const int rem = n - p;
  if (n == 1) {
    plan.beginPhase();
    plan.add(copyFlow(at(Buf::kSend, 0), at(Buf::kRecv, 0), bytes)).finalize = true;
    return;
  }
  plan.scratchBytes = 2 * bytes;
  if (r < 2 * rem && r % 2 == 0) {  // folded out: hand data over, get the result back
    plan.beginPhase();
    plan.add(sendFlow(r + 1, at(Buf::kSend, 0), bytes));
    plan.beginPhase();
    plan.add(recvFlow(r + 1, at(Buf::kRecv, 0), bytes));
    return;
  }
  int rounds = 0;
  for (int m = 1; m < p; m <<= 1) ++rounds;
  int writes = rounds + (r < 2 * rem ? 1 : 0);
  // Target of write i (1-based): scratch halves alternately, the last one
  // recvbuff. In place with a single write, recvbuff is the buffer being sent
  // in that same phase: write to scratch and copy back afterwards.
  const bool copyBack = a.inPlace && writes == 1;
  auto target = [&](int i) {
    if (i == writes && !copyBack) return at(Buf::kRecv, 0);
    return at(Buf::kScratch, (i % 2) * bytes);
  };
  // An exchange round is cut into slices, one phase each (exchangeSlices:
  // about a millisecond of the link). Slice i of a round reads only what
  // slice i of the round before wrote.
  const size_t slices = exchangeSlices(a.topo, a.count, plan.elemSize);
  Ref acc = at(Buf::kSend, 0);
  int written = 0;
  auto reduceFrom = [&](int peer, bool exchange) {
    ++written;
    Ref dst = target(written);
    const size_t parts = exchange ? slices : 1;
    for (size_t i = 0; i < parts; ++i) {
      const ByteSpan s = blockSpan(a.count, int(parts), int(i), plan.elemSize);
      plan.beginPhase();
      if (exchange) plan.add(sendFlow(peer, plus(acc, s.offset), s.bytes));
      Flow f = recvFlow(peer, plus(dst, s.offset), s.bytes);
      f.reduce = true;
      f.src = plus(acc, s.offset);
      f.finalize = written == writes;
      plan.add(f);
    }
    acc = dst;
  };
  if (r < 2 * rem) reduceFrom(r - 1, false);  // odd rank absorbs its even neighbour
  const int v = r < 2 * rem ? r / 2 : r - rem;
  for (int m = 1; m < p; m <<= 1) {
    int pv = v ^ m;
    int partner = pv < rem ? pv * 2 + 1 : pv + rem;
    reduceFrom(partner, true);
  }
  if (copyBack) {
    plan.beginPhase();
    plan.add(copyFlow(acc, at(Buf::kRecv, 0), bytes));
  }
  if (r < 2 * rem) {
    plan.beginPhase();
    plan.add(sendFlow(r - 1, at(Buf::kRecv, 0), bytes));
  }
}

}  // namespace strata
