// Bruck's all-to-all: ceil(log2 n) steps instead of pairwise's n-1, for
// messages small enough that each step's latency costs more than its bytes
// (every rank moves about n/2 blocks a step, n/2 log2 n in all, against n-1).
// Expert-parallel all-to-alls of a few KiB per peer on many nodes are that
// case: one rank per node, nothing for hier_pairwise to aggregate.
//
// Rank r first lays its blocks out so that slot i holds its block for rank
// r - i. In step k every rank sends the slots whose index has bit k set to
// rank r - 2^k and receives the same slots from rank r + 2^k: a block for
// rank r - i moves 2^k for each bit k of i, i in all, so after the last step
// slot i of rank d holds the block rank d + i sent it, and the final layout
// is a rotation (two contiguous copies). The slots with bit k set are runs of
// 2^k slots every 2^(k+1), the last run perhaps shorter: one strided flow and
// one plain one each way. A step's sends read the slots its receives would
// overwrite, so the receives land beside them (a second set of slots) and are
// copied back after the step.
#include <vector>

#include "algo/algorithms.h"

namespace strata {

namespace {

// Slots first .. first + count - 1 in `runs` equal runs `stride` bytes apart
// (runs 1: one range).
struct SlotRuns {
  size_t first, count;
  uint32_t runs;
  size_t stride;
};

// The slots with bit k set among n slots of `slotBytes`: the whole runs (one
// strided set), then the shorter last run.
std::vector<SlotRuns> slotsWithBit(int n, int k, size_t slotBytes) {
  const size_t run = size_t(1) << k, period = run * 2;
  const size_t whole = size_t(n) / period;
  std::vector<SlotRuns> out;
  if (whole > 0) out.push_back({run, whole * run, uint32_t(whole), period * slotBytes});
  const size_t tail = run + whole * period;
  if (tail < size_t(n)) out.push_back({tail, size_t(n) - tail, 1u, 0});
  return out;
}

// `f` over the slots `s`, laid out as they are.
Flow strided(Flow f, const SlotRuns& s) {
  f.runs = s.runs;
  f.srcStride = f.kind == FlowKind::kRecv ? 0 : s.stride;
  f.dstStride = f.kind == FlowKind::kSend ? 0 : s.stride;
  return f;
}

}  // namespace

void buildBruckAllToAll(const CollArgs& a, Plan& plan) {
  const int n = a.nranks, r = a.rank;
  const size_t block = a.count * plan.elemSize, all = block * size_t(n);
  if (n == 1) {
    if (!a.inPlace) {
      plan.beginPhase();
      plan.add(copyFlow(at(Buf::kSend, 0), at(Buf::kRecv, 0), block));
    }
    return;
  }
  const Ref slots = at(Buf::kScratch, 0), landed = at(Buf::kScratch, all);
  plan.scratchBytes = 2 * all;
  plan.beginPhase();  // slot i: the block for rank r - i
  for (int i = 0; i < n; ++i)
    plan.add(copyFlow(at(Buf::kSend, size_t((r - i + n) % n) * block), plus(slots, size_t(i) * block), block));
  for (int k = 0; (1 << k) < n; ++k) {
    const int to = (r - (1 << k) + n) % n, from = (r + (1 << k)) % n;
    const std::vector<SlotRuns> moved = slotsWithBit(n, k, block);
    plan.beginPhase();
    for (const SlotRuns& m : moved) plan.add(strided(sendFlow(to, plus(slots, m.first * block), m.count * block), m));
    for (const SlotRuns& m : moved)
      plan.add(strided(recvFlow(from, plus(landed, m.first * block), m.count * block), m));
    plan.beginPhase();
    for (const SlotRuns& m : moved)
      plan.add(strided(copyFlow(plus(landed, m.first * block), plus(slots, m.first * block), m.count * block), m));
  }
  // Slot i holds rank r + i's block for this rank.
  plan.beginPhase();
  plan.add(copyFlow(slots, at(Buf::kRecv, size_t(r) * block), size_t(n - r) * block));
  if (r > 0) plan.add(copyFlow(plus(slots, size_t(n - r) * block), at(Buf::kRecv, 0), size_t(r) * block));
}

}  // namespace strata
