// Binomial-tree broadcast for small messages: ceil(log2 N) rounds, the set of
// ranks holding the data doubling each round.
#include "algo/algorithms.h"

namespace strata {

void buildTreeBroadcast(const CollArgs& a, Plan& plan) {
  const int n = a.nranks, v = (a.rank - a.root + n) % n;
  const size_t bytes = a.count * plan.elemSize;
  auto real = [&](int rel) { return (rel + a.root) % n; };
  Ref data = at(Buf::kRecv, 0);
  int mask = 1;
  while (mask < n) {
    if (v & mask) {
      plan.beginPhase();
      plan.add(recvFlow(real(v - mask), data, bytes));
      break;
    }
    mask <<= 1;
  }
  if (v == 0) {
    if (!a.inPlace) {
      plan.beginPhase();
      plan.add(copyFlow(at(Buf::kSend, 0), data, bytes));
    }
  }
  plan.beginPhase();
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (v + mask < n) plan.add(sendFlow(real(v + mask), v == 0 ? at(Buf::kSend, 0) : data, bytes));
}

}  // namespace strata
