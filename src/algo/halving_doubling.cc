#include "algo/halving_doubling.h"

#include <algorithm>
#include <utility>

#include "algo/algorithms.h"

namespace strata {

namespace {

// Elements [begin, end) of the team's buffer.
struct Range {
  size_t begin = 0, end = 0;
  size_t size() const { return end - begin; }
};

// One exchange with `peer`, cut into pipeline slices (one per phase, the same
// cut on both sides): send `out`, receive `in` (reduced into place when `reduce`).
void exchange(Plan& plan, int peer, Ref buf, Range out, Range in, bool reduce, bool finalize, size_t chunkBytes) {
  const size_t e = plan.elemSize;
  const size_t slices = sliceCount(std::max(out.size(), in.size()) * e, chunkBytes);
  for (size_t s = 0; s < slices; ++s) {
    plan.beginPhase();
    size_t ob = out.begin + blockBegin(out.size(), int(slices), int(s));
    size_t oe = out.begin + blockBegin(out.size(), int(slices), int(s) + 1);
    size_t ib = in.begin + blockBegin(in.size(), int(slices), int(s));
    size_t ie = in.begin + blockBegin(in.size(), int(slices), int(s) + 1);
    if (oe > ob) plan.add(sendFlow(peer, plus(buf, ob * e), (oe - ob) * e));
    if (ie > ib) {
      Flow f = recvFlow(peer, plus(buf, ib * e), (ie - ib) * e);
      if (reduce) {
        f.reduce = true;
        f.src = plus(buf, ib * e);
        f.finalize = finalize;
      }
      plan.add(f);
    }
  }
}

}  // namespace

void emitHalvingDoublingAllReduceInPlace(Plan& plan, const Team& team, Ref buf, size_t elems, size_t chunkBytes,
                                         bool finalize) {
  const int n = team.size(), me = team.me;
  if (n == 1) {
    if (finalize) {
      plan.beginPhase();
      plan.add(copyFlow(buf, buf, elems * plan.elemSize)).finalize = true;
    }
    return;
  }
  int p = 1;
  while (p * 2 <= n) p *= 2;
  const int rem = n - p;
  const Range all{0, elems};
  if (me < 2 * rem && me % 2 == 0) {  // folded out: hand the data over, get the result back
    exchange(plan, team.members[size_t(me + 1)], buf, all, Range{}, false, false, chunkBytes);
    exchange(plan, team.members[size_t(me + 1)], buf, Range{}, all, false, false, chunkBytes);
    return;
  }
  if (me < 2 * rem)  // the odd member absorbs its even neighbour
    exchange(plan, team.members[size_t(me - 1)], buf, Range{}, all, true, false, chunkBytes);
  const int v = me < 2 * rem ? me / 2 : me - rem;
  auto member = [&](int u) { return team.members[size_t(u < rem ? 2 * u + 1 : u + rem)]; };
  // Halving: the region both partners share splits; each keeps one half, reduced.
  std::vector<Range> before;  // the region before each halving step
  Range mine = all;
  for (int mask = p / 2; mask >= 1; mask >>= 1) {
    before.push_back(mine);
    Range lower{mine.begin, mine.begin + mine.size() / 2}, upper{lower.end, mine.end};
    const bool keepLower = (v & mask) == 0;
    Range keep = keepLower ? lower : upper, give = keepLower ? upper : lower;
    exchange(plan, member(v ^ mask), buf, give, keep, true, finalize && mask == 1, chunkBytes);
    mine = keep;
  }
  // Doubling: partners swap their halves of the region they split.
  for (int mask = 1; mask < p; mask <<= 1) {
    Range parent = before.back();
    before.pop_back();
    Range other = mine.begin == parent.begin ? Range{mine.end, parent.end} : Range{parent.begin, mine.begin};
    exchange(plan, member(v ^ mask), buf, mine, other, false, false, chunkBytes);
    mine = parent;
  }
  if (me < 2 * rem)  // the result back to the folded-out neighbour
    exchange(plan, team.members[size_t(me - 1)], buf, all, Range{}, false, false, chunkBytes);
}

}  // namespace strata
