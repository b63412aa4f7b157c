// Pairwise-exchange all-to-all: in step k every rank sends to rank+k and
// receives from rank-k at the same time, so each step is a perfect matching.
#include "algo/algorithms.h"
#include "algo/log_blocks.h"

namespace strata {

void buildPairwiseAllToAll(const CollArgs& a, Plan& plan) {
  const int n = a.nranks, r = a.rank;
  const size_t blockBytes = a.count * plan.elemSize;
  Buf source = Buf::kSend;
  if (a.inPlace && n > 1) {  // blocks are overwritten before they are sent: keep a copy
    plan.scratchBytes = blockBytes * size_t(n);
    plan.beginPhase();
    plan.add(copyFlow(at(Buf::kSend, 0), at(Buf::kScratch, 0), blockBytes * size_t(n)));
    source = Buf::kScratch;
  }
  if (!a.inPlace) {
    plan.beginPhase();
    plan.add(copyFlow(at(Buf::kSend, size_t(r) * blockBytes), at(Buf::kRecv, size_t(r) * blockBytes),
                      blockBytes));
  }
  // Each step in slices, one phase each (exchangeSlices).
  const size_t slices = n > 1 ? exchangeSlices(a.topo, a.count, plan.elemSize) : 1;
  for (int k = 1; k < n; ++k) {
    int to = (r + k) % n, from = (r - k + n) % n;
    for (size_t i = 0; i < slices; ++i) {
      const ByteSpan s = blockSpan(a.count, int(slices), int(i), plan.elemSize);
      plan.beginPhase();
      plan.add(sendFlow(to, at(source, size_t(to) * blockBytes + s.offset), s.bytes));
      plan.add(recvFlow(from, at(Buf::kRecv, size_t(from) * blockBytes + s.offset), s.bytes));
    }
  }
}

}  // namespace strata
