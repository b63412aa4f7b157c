#include "algo/radix_blocks.h"

#include <algorithm>

#include "algo/algorithms.h"
#include "algo/compose.h"
#include "algo/log_blocks.h"

namespace strata {

namespace {

long long power(int base, int exponent) {
  long long p = 1;
  for (int i = 0; i < exponent; ++i) p *= base;
  return p;
}

// The distances of the all-gather's steps: 1, k, k^2, ... below t.
std::vector<int> distances(int t, int radix) {
  std::vector<int> d;
  for (long long x = 1; x < t; x *= radix) d.push_back(int(x));
  return d;
}

int mod(long long x, int t) { return int(((x % t) + t) % t); }

// The blocks a message with partner i of a step at distance d carries, as
// offsets from its first block: as many as the partner holds (d), fewer in
// the last step (only those still missing).
int blocksWith(int i, int d, int t) { return std::min(d, t - i * d); }

// Pipeline slices of a step: from its largest message, as log_blocks.cc's
// stepSlices; the same on every member.
size_t radixStepSlices(const std::vector<RingBlock>& blocks, const RadixStep& step, size_t elemSize, size_t slice) {
  size_t maxBlock = 0, maxBlocks = 0;
  for (const RingBlock& b : blocks) maxBlock = std::max(maxBlock, b.elems);
  for (const RadixTransfer& m : step.sends) maxBlocks = std::max(maxBlocks, m.blocks.size());
  return std::min(sliceCount(maxBlock * elemSize * maxBlocks, slice), std::max<size_t>(maxBlock, 1));
}

// Slice `sl` of `slices` of block q at `where`, as a source or a destination.
Piece slicePiece(const std::vector<RingBlock>& blocks, size_t e, size_t slices, size_t sl, int q, Ref src, Ref dst) {
  const size_t elems = blocks[size_t(q)].elems;
  const size_t b0 = blockBegin(elems, int(slices), int(sl)), b1 = blockBegin(elems, int(slices), int(sl) + 1);
  return Piece{src.valid() ? plus(src, b0 * e) : Ref{}, dst.valid() ? plus(dst, b0 * e) : Ref{}, (b1 - b0) * e};
}

}  // namespace

std::vector<int> radixCandidates(int t) {
  if (t < 2) return {2};
  int fewest = 0, most = 0;
  for (long long reach = 1; reach < t; reach *= kMaxRadix) ++fewest;
  for (long long reach = 1; reach < t; reach *= 2) ++most;
  std::vector<int> radices;
  for (int steps = fewest; steps <= most; ++steps) {
    int radix = 2;
    while (power(radix, steps) < t) ++radix;
    if (radices.empty() || radices.back() != radix) radices.push_back(radix);
  }
  return radices;
}

int radixFor(int t) { return radixCandidates(t).front(); }

std::vector<RadixStep> radixAllGatherSteps(int t, int me, int radix) {
  std::vector<RadixStep> steps;
  for (int d : distances(t, radix)) {
    RadixStep s;
    for (int i = 1; i < radix && i * d < t; ++i) {
      RadixTransfer out, in;
      out.peer = mod(me - (long long)i * d, t);
      in.peer = mod(me + (long long)i * d, t);
      for (int o = 0; o < blocksWith(i, d, t); ++o) {
        out.blocks.push_back(mod(me + o, t));
        in.blocks.push_back(mod(me + (long long)i * d + o, t));
      }
      s.sends.push_back(out);
      s.recvs.push_back(in);
    }
    steps.push_back(s);
  }
  return steps;
}

// The all-gather's steps reversed in time and direction: what a member
// received from a partner it now sends its partials of back, and what it sent
// comes back to be reduced into its own.
std::vector<RadixStep> radixReduceScatterSteps(int t, int me, int radix) {
  std::vector<RadixStep> steps = radixAllGatherSteps(t, me, radix);
  std::reverse(steps.begin(), steps.end());
  for (RadixStep& s : steps) std::swap(s.sends, s.recvs);
  return steps;
}

void emitRadixReduceScatter(Plan& plan, const Team& team, const std::vector<RingBlock>& blocks, size_t sliceBytes,
                            bool finalize, int radix) {
  checkOneBlockPerMember(team, blocks, "radix");
  if (emitLoneMemberReduceScatter(plan, team, blocks, finalize)) return;
  const int t = team.size(), me = team.me;
  const size_t e = plan.elemSize;
  const std::vector<RadixStep> steps = radixReduceScatterSteps(t, me, radix);
  std::vector<bool> reduced(static_cast<size_t>(t), false);
  for (const RadixStep& s : steps)
    for (const RadixTransfer& m : s.recvs)
      for (int q : m.blocks) reduced[size_t(q)] = true;
  const std::vector<Ref> target = partialSumTargets(plan, blocks, reduced);
  std::vector<Ref> current(static_cast<size_t>(t));
  for (int q = 0; q < t; ++q) current[size_t(q)] = blocks[size_t(q)].src;
  for (size_t k = 0; k < steps.size(); ++k) {
    const RadixStep& s = steps[k];
    const bool last = k + 1 == steps.size();
    const size_t slices = radixStepSlices(blocks, s, e, sliceBytes);
    for (size_t sl = 0; sl < slices; ++sl) {
      // One phase: every partial this step sends, and the first partner's
      // contributions reduced with mine into the targets.
      plan.beginPhase();
      for (const RadixTransfer& m : s.sends) {
        std::vector<Piece> out;
        for (int q : m.blocks) out.push_back(slicePiece(blocks, e, slices, sl, q, current[size_t(q)], Ref{}));
        addPieces(plan, sendFlow(team.members[size_t(m.peer)], Ref{}, 0), out);
      }
      // Then each further partner's, one phase each, onto the targets: a
      // partner's blocks are a prefix of the first partner's.
      for (size_t i = 0; i < s.recvs.size(); ++i) {
        if (i > 0) plan.beginPhase();
        const RadixTransfer& m = s.recvs[i];
        std::vector<Piece> in;
        for (int q : m.blocks)
          in.push_back(slicePiece(blocks, e, slices, sl, q, i == 0 ? current[size_t(q)] : target[size_t(q)],
                                  target[size_t(q)]));
        Flow r = recvFlow(team.members[size_t(m.peer)], Ref{}, 0);
        r.reduce = true;
        r.finalize = finalize && last && i + 1 == s.recvs.size();  // the last step receives only my block
        addPieces(plan, r, in);
      }
    }
    for (const RadixTransfer& m : s.recvs)
      for (int q : m.blocks) current[size_t(q)] = target[size_t(q)];
  }
}

void emitRadixAllGather(Plan& plan, const Team& team, const std::vector<RingBlock>& blocks, size_t sliceBytes,
                        int radix) {
  checkOneBlockPerMember(team, blocks, "radix");
  const int t = team.size(), me = team.me;
  const size_t e = plan.elemSize;
  const RingBlock& own = blocks[size_t(me)];
  const std::vector<RadixStep> steps = radixAllGatherSteps(t, me, radix);
  if (steps.empty()) {
    if (!sameRegion(own)) {
      plan.beginPhase();
      plan.add(copyFlow(own.src, own.dst, own.elems * e));
    }
    return;
  }
  for (size_t k = 0; k < steps.size(); ++k) {
    const RadixStep& s = steps[k];
    const size_t slices = radixStepSlices(blocks, s, e, sliceBytes);
    for (size_t sl = 0; sl < slices; ++sl) {
      plan.beginPhase();
      if (k == 0 && !sameRegion(own)) {  // my block into place, beside sending it from where it lies
        const Piece p = slicePiece(blocks, e, slices, sl, me, own.src, own.dst);
        if (p.bytes) plan.add(copyFlow(p.src, p.dst, p.bytes));
      }
      for (const RadixTransfer& m : s.sends) {
        std::vector<Piece> out;
        for (int q : m.blocks)
          out.push_back(slicePiece(blocks, e, slices, sl, q, k == 0 ? own.src : blocks[size_t(q)].dst, Ref{}));
        addPieces(plan, sendFlow(team.members[size_t(m.peer)], Ref{}, 0), out);
      }
      for (const RadixTransfer& m : s.recvs) {
        std::vector<Piece> in;
        for (int q : m.blocks) in.push_back(slicePiece(blocks, e, slices, sl, q, Ref{}, blocks[size_t(q)].dst));
        addPieces(plan, recvFlow(team.members[size_t(m.peer)], Ref{}, 0), in);
      }
    }
  }
}

}  // namespace strata
