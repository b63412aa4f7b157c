// Binomial-tree reduce for small messages: each rank folds in its children's
// partial results (in a fixed order) and passes the sum to its parent.
#include "algo/algorithms.h"

namespace strata {

void buildTreeReduce(const CollArgs& a, Plan& plan) {
  const int n = a.nranks, v = (a.rank - a.root + n) % n;
  const size_t bytes = a.count * plan.elemSize;
  auto real = [&](int rel) { return (rel + a.root) % n; };
  // Children of v are v + m for each power of two m below v's lowest set bit.
  std::vector<int> children;
  int parentMask = 0;
  for (int m = 1; m < n; m <<= 1) {
    if (v & m) {
      parentMask = m;
      break;
    }
    if (v + m < n) children.push_back(v + m);
  }
  Ref acc = at(Buf::kSend, 0);
  if (children.empty() && v == 0) {
    plan.beginPhase();
    plan.add(copyFlow(acc, at(Buf::kRecv, 0), bytes)).finalize = true;
    return;
  }
  if (!children.empty()) plan.scratchBytes = bytes;
  for (size_t i = 0; i < children.size(); ++i) {
    bool last = i + 1 == children.size();
    Flow f = recvFlow(real(children[i]), Ref{}, bytes);
    f.reduce = true;
    f.src = acc;
    f.dst = (v == 0 && last) ? at(Buf::kRecv, 0) : at(Buf::kScratch, 0);
    f.finalize = v == 0 && last;
    plan.beginPhase();
    plan.add(f);
    acc = f.dst;
  }
  if (v != 0) {
    plan.beginPhase();
    plan.add(sendFlow(real(v - parentMask), acc, bytes));
  }
}

}  // namespace strata
