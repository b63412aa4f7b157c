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
// one plain one each way (more where a large step is cut into slices). A
// step's sends read the slots its receives would overwrite, so the receives
// land beside them (a second set of slots) and are copied back after the
// step.
#include <algorithm>
#include <vector>

#include "algo/algorithms.h"
#include "algo/log_blocks.h"

namespace strata {

namespace {

// Pieces of equal length `runBytes`, `runs` of them `stride` bytes apart
// from `offset` (runs 1: one range).
struct Runs {
  size_t offset;
  uint32_t runs;
  size_t stride, runBytes;
  size_t bytes() const { return size_t(runs) * runBytes; }
};

// Bytes `from` .. `from + len` of each of the n slots (of `block` bytes)
// whose index has bit k set. Those slots are runs of 2^k every 2^(k+1), the
// last perhaps shorter. Whole slots (len == block): the whole runs as one
// strided set, the last run as one range. Part of each slot (a step cut into
// slices): the slots at one position in every whole run as a strided set
// each (2^k sets), or each whole run's slots as one (whichever is fewer
// sets), and the last run's slots as one.
std::vector<Runs> slotsWithBit(int n, int k, size_t block, size_t from, size_t len) {
  const size_t run = size_t(1) << k, period = run * 2;
  const size_t whole = size_t(n) / period, tail = run + whole * period;
  const size_t tailSlots = tail < size_t(n) ? size_t(n) - tail : 0;
  std::vector<Runs> out;
  if (len == block) {
    if (whole > 0) out.push_back({run * block, uint32_t(whole), period * block, run * block});
    if (tailSlots > 0) out.push_back({tail * block, 1u, 0, tailSlots * block});
    return out;
  }
  if (whole > 0 && run <= whole)
    for (size_t j = 0; j < run; ++j) out.push_back({(run + j) * block + from, uint32_t(whole), period * block, len});
  else
    for (size_t w = 0; w < whole; ++w) out.push_back({(run + w * period) * block + from, uint32_t(run), block, len});
  if (tailSlots > 0) out.push_back({tail * block + from, uint32_t(tailSlots), block, len});
  return out;
}

// `f` over the pieces `s`, laid out as they are.
Flow strided(Flow f, const Runs& s) {
  f.runs = s.runs;
  const size_t stride = s.runs > 1 ? s.stride : 0;
  f.srcStride = f.kind == FlowKind::kRecv ? 0 : stride;
  f.dstStride = f.kind == FlowKind::kSend ? 0 : stride;
  return f;
}

}  // namespace

size_t bruckBlocksMoved(int n, int k) {
  size_t moved = 0;
  for (int i = 0; i < n; ++i) moved += size_t((i >> k) & 1);
  return moved;
}

void buildBruckAllToAll(const CollArgs& a, Plan& plan) {
  const int n = a.nranks, r = a.rank;
  const size_t e = plan.elemSize, block = a.count * e, all = block * size_t(n);
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
    // A step's message cut into link-sized slices, one phase each, as the
    // other exchanges are (exchangeSlices): slice s carries the same part of
    // every moved block. In one piece, a step of 512 KiB or more over the
    // tbf-shaped namespace links took 2-2.7x its bytes' time.
    const size_t slices = std::min(exchangeSlices(a.topo, bruckBlocksMoved(n, k) * a.count, e), std::max<size_t>(a.count, 1));
    for (size_t s = 0; s < slices; ++s) {
      const ByteSpan part = blockSpan(a.count, int(slices), int(s), e);
      const std::vector<Runs> moved = slotsWithBit(n, k, block, part.offset, slices == 1 ? block : part.bytes);
      plan.beginPhase();
      for (const Runs& m : moved) plan.add(strided(sendFlow(to, plus(slots, m.offset), m.bytes()), m));
      for (const Runs& m : moved) plan.add(strided(recvFlow(from, plus(landed, m.offset), m.bytes()), m));
    }
    plan.beginPhase();
    for (const Runs& m : slotsWithBit(n, k, block, 0, block))
      plan.add(strided(copyFlow(plus(landed, m.offset), plus(slots, m.offset), m.bytes()), m));
  }
  // Slot i holds rank r + i's block for this rank.
  plan.beginPhase();
  plan.add(copyFlow(slots, at(Buf::kRecv, size_t(r) * block), size_t(n - r) * block));
  if (r > 0) plan.add(copyFlow(plus(slots, size_t(n - r) * block), at(Buf::kRecv, 0), size_t(r) * block));
}

}  // namespace strata
