#include "algo/log_blocks.h"

#include <algorithm>

#include "algo/algorithms.h"
#include "algo/compose.h"
#include "core/error.h"

namespace strata {

namespace {

bool powerOfTwo(int t) { return t > 0 && (t & (t - 1)) == 0; }

int ceilLog2(int t) {
  int k = 0;
  while ((1 << k) < t) ++k;
  return k;
}

}  // namespace

void checkOneBlockPerMember(const Team& team, const std::vector<RingBlock>& blocks, const char* emitter) {
  if (blocks.size() != size_t(team.size()))
    fail(strataInternalError, "%s emitter: %zu blocks for a team of %d", emitter, blocks.size(), team.size());
  for (size_t q = 0; q < blocks.size(); ++q)
    if (blocks[q].owner != int(q) || blocks[q].runs > 1)
      fail(strataInternalError, "%s emitter: block %zu must be one run owned by member %zu", emitter, q, q);
}

bool emitLoneMemberReduceScatter(Plan& plan, const Team& team, const std::vector<RingBlock>& blocks,
                                 bool finalize) {
  if (team.size() != 1) return false;
  const RingBlock& own = blocks[size_t(team.me)];
  if (!sameRegion(own) || finalize) {
    plan.beginPhase();
    plan.add(copyFlow(own.src, own.dst, own.elems * plan.elemSize)).finalize = finalize;
  }
  return true;
}

std::vector<Ref> partialSumTargets(Plan& plan, const std::vector<RingBlock>& blocks, const std::vector<bool>& reduced) {
  const size_t e = plan.elemSize;
  size_t scratch = 0;
  for (size_t q = 0; q < blocks.size(); ++q)
    if (reduced[q] && !blocks[q].dst.valid()) scratch += blocks[q].elems * e;
  Ref base = scratch ? reserveScratch(plan, scratch) : Ref{};
  std::vector<Ref> target(blocks.size());
  for (size_t q = 0; q < blocks.size(); ++q) {
    if (blocks[q].dst.valid()) {
      target[q] = blocks[q].dst;
    } else if (reduced[q]) {
      target[q] = base;
      base = plus(base, blocks[q].elems * e);
    }
  }
  return target;
}

std::vector<LogStepShape> logStepShapes(int t, bool reduceScatter) {
  std::vector<LogStepShape> shapes;
  if (powerOfTwo(t)) {  // recursive doubling: groups of 1, 2, 4, ...; halving: the reverse
    for (int mask = 1; mask < t; mask <<= 1) shapes.push_back(LogStepShape{true, mask, mask});
  } else {  // Bruck: distance 2^k, the last step only what is still missing
    for (int k = 0, d = 1; k < ceilLog2(t); ++k, d <<= 1) shapes.push_back(LogStepShape{false, d, std::min(d, t - d)});
  }
  if (reduceScatter) std::reverse(shapes.begin(), shapes.end());
  return shapes;
}

std::vector<LogStep> logAllGatherSteps(int t, int me) {
  std::vector<LogStep> steps;
  for (const LogStepShape& sh : logStepShapes(t, false)) {
    LogStep s;
    s.sendTo = sh.sendsTo(me, t, false);
    s.recvFrom = sh.exchange ? s.sendTo : (me + sh.distance) % t;
    // Recursive doubling: my aligned group of `distance` members for the
    // partner's; Bruck: the `blocks` members from me on, for those from the sender on.
    const int mine = sh.exchange ? me & ~(sh.distance - 1) : me;
    const int theirs = sh.exchange ? s.recvFrom & ~(sh.distance - 1) : s.recvFrom;
    for (int o = 0; o < sh.blocks; ++o) {
      s.sent.push_back((mine + o) % t);
      s.received.push_back((theirs + o) % t);
    }
    steps.push_back(s);
  }
  return steps;
}

std::vector<LogStep> logReduceScatterSteps(int t, int me) {
  std::vector<LogStep> steps;
  for (const LogStepShape& sh : logStepShapes(t, true)) {
    LogStep s;
    s.sendTo = sh.sendsTo(me, t, true);
    s.recvFrom = sh.exchange ? s.sendTo : (me - sh.distance + t) % t;
    // Recursive halving: of the aligned group of 2 x distance members, the
    // partner's half goes, mine is reduced; Bruck reversed: the blocks the
    // all-gather would have received from the partner go to it, those it
    // would have sent come back reduced.
    const int group = me & ~(2 * sh.distance - 1);
    const int theirs = sh.exchange ? group + ((me & sh.distance) ^ sh.distance) : s.sendTo;
    const int mine = sh.exchange ? group + (me & sh.distance) : me;
    for (int o = 0; o < sh.blocks; ++o) {
      s.sent.push_back((theirs + o) % t);
      s.received.push_back((mine + o) % t);
    }
    steps.push_back(s);
  }
  return steps;
}

namespace {

// Each step is cut into pipeline slices, one phase each, so that no message
// of a phase exceeds about a slice: the partners go in lockstep slice by
// slice, and a rank never runs megabytes ahead into its socket buffers while
// its partner lags (on 8 shaped namespace nodes a 16 MiB recursive halving
// took 2x the ring in unsliced steps, 1.13x in 512 KiB slices, the ring's
// time in 128 KiB ones; overlapping the steps instead, slice s of step k
// beside slice s + 1 of step k - 1, took 1.45x: a phase then waits for
// several partners at once). The count comes from the largest block and the
// step's block count, the same on every member.
size_t stepSlices(const std::vector<RingBlock>& blocks, const LogStepShape& shape, size_t elemSize, size_t chunk) {
  size_t maxBlock = 0;
  for (const RingBlock& b : blocks) maxBlock = std::max(maxBlock, b.elems);
  return std::min(sliceCount(maxBlock * elemSize * size_t(shape.blocks), chunk), std::max<size_t>(maxBlock, 1));
}

}  // namespace

size_t linkPhaseBytes(const Topology* t, size_t chunkBytes) {
  if (!t) return chunkBytes;
  constexpr double kPhaseUs = 1000;    // about a millisecond of link time per phase
  constexpr size_t kMinSlice = 65536;  // below this the phases' latency shows on fast links
  const LinkParams& link = t->nnodes() > 1 ? t->inter : t->intra;
  const double linkBytes = link.gbps * 1e3 * kPhaseUs;
  const size_t slice = linkBytes > 0 ? std::max(kMinSlice, size_t(linkBytes)) : chunkBytes;
  return std::min(slice, chunkBytes);
}

size_t exchangeSlices(const Topology* t, size_t elems, size_t elemSize) {
  const size_t bytes = elems * elemSize;
  if (bytes == 0) return 1;
  return std::min(sliceCount(bytes, linkPhaseBytes(t, bytes)), elems);
}

void emitLogReduceScatter(Plan& plan, const Team& team, const std::vector<RingBlock>& blocks, size_t sliceBytes,
                          bool finalize) {
  checkOneBlockPerMember(team, blocks, "log-step");
  if (emitLoneMemberReduceScatter(plan, team, blocks, finalize)) return;
  const int t = team.size(), me = team.me;
  const size_t e = plan.elemSize;
  const std::vector<LogStep> steps = logReduceScatterSteps(t, me);
  std::vector<bool> reduced(static_cast<size_t>(t), false);
  for (const LogStep& s : steps)
    for (int q : s.received) reduced[size_t(q)] = true;
  const std::vector<Ref> target = partialSumTargets(plan, blocks, reduced);
  // Where my partial of each block is before each step.
  std::vector<std::vector<Ref>> before(steps.size());
  std::vector<Ref> current(static_cast<size_t>(t));
  for (int q = 0; q < t; ++q) current[size_t(q)] = blocks[size_t(q)].src;
  for (size_t k = 0; k < steps.size(); ++k) {
    before[k] = current;
    for (int q : steps[k].received) current[size_t(q)] = target[size_t(q)];
  }
  const std::vector<LogStepShape> shapes = logStepShapes(t, true);
  for (size_t k = 0; k < steps.size(); ++k) {
    const LogStep& s = steps[k];
    const size_t slices = stepSlices(blocks, shapes[k], e, sliceBytes);
    for (size_t sl = 0; sl < slices; ++sl) {
      auto piece = [&](int q, bool withTarget) {
        const size_t elems = blocks[size_t(q)].elems;
        const size_t b0 = blockBegin(elems, int(slices), int(sl)), b1 = blockBegin(elems, int(slices), int(sl) + 1);
        return Piece{plus(before[k][size_t(q)], b0 * e), withTarget ? plus(target[size_t(q)], b0 * e) : Ref{},
                     (b1 - b0) * e};
      };
      std::vector<Piece> out, in;
      for (int q : s.sent) out.push_back(piece(q, false));
      for (int q : s.received) in.push_back(piece(q, true));
      plan.beginPhase();
      addPieces(plan, sendFlow(team.members[size_t(s.sendTo)], Ref{}, 0), out);
      Flow r = recvFlow(team.members[size_t(s.recvFrom)], Ref{}, 0);
      r.reduce = true;
      r.finalize = finalize && k + 1 == steps.size();  // the last step receives only my block
      addPieces(plan, r, in);
    }
  }
}

void emitLogAllGather(Plan& plan, const Team& team, const std::vector<RingBlock>& blocks, size_t sliceBytes) {
  checkOneBlockPerMember(team, blocks, "log-step");
  const int t = team.size(), me = team.me;
  const size_t e = plan.elemSize;
  const RingBlock& own = blocks[size_t(me)];
  const std::vector<LogStep> steps = logAllGatherSteps(t, me);
  if (steps.empty()) {
    if (!sameRegion(own)) {
      plan.beginPhase();
      plan.add(copyFlow(own.src, own.dst, own.elems * e));
    }
    return;
  }
  const std::vector<LogStepShape> shapes = logStepShapes(t, false);
  for (size_t k = 0; k < steps.size(); ++k) {
    const LogStep& s = steps[k];
    const size_t slices = stepSlices(blocks, shapes[k], e, sliceBytes);
    for (size_t sl = 0; sl < slices; ++sl) {
      auto piece = [&](int q, Ref where, bool asSource) {
        const size_t elems = blocks[size_t(q)].elems;
        const size_t b0 = blockBegin(elems, int(slices), int(sl)), b1 = blockBegin(elems, int(slices), int(sl) + 1);
        return Piece{asSource ? plus(where, b0 * e) : Ref{}, asSource ? Ref{} : plus(where, b0 * e), (b1 - b0) * e};
      };
      plan.beginPhase();
      if (k == 0) {  // my block (the first step sends only it): copied into place and sent in one pass
        const Piece p = piece(me, own.src, true);
        Flow first = copyFlow(p.src, plus(own.dst, p.src.offset - own.src.offset), p.bytes);
        if (sameRegion(own)) first.dst = Ref{};
        first.forwardPeer = team.members[size_t(s.sendTo)];
        plan.add(first);
      } else {
        std::vector<Piece> out;
        for (int q : s.sent) out.push_back(piece(q, blocks[size_t(q)].dst, true));
        addPieces(plan, sendFlow(team.members[size_t(s.sendTo)], Ref{}, 0), out);
      }
      std::vector<Piece> in;
      for (int q : s.received) in.push_back(piece(q, blocks[size_t(q)].dst, false));
      addPieces(plan, recvFlow(team.members[size_t(s.recvFrom)], Ref{}, 0), in);
    }
  }
}

void emitLogAllReduceInPlace(Plan& plan, const Team& team, Ref buf, size_t elems, size_t sliceBytes, bool finalize) {
  const int t = team.size();
  std::vector<RingBlock> blocks(static_cast<size_t>(t));
  for (int q = 0; q < t; ++q) {
    RingBlock& b = blocks[size_t(q)];
    const size_t begin = blockBegin(elems, t, q);
    b.owner = q;
    b.src = b.dst = plus(buf, begin * plan.elemSize);
    b.elems = blockBegin(elems, t, q + 1) - begin;
  }
  emitLogReduceScatter(plan, team, blocks, sliceBytes, finalize);
  emitLogAllGather(plan, team, blocks, sliceBytes);
}

}  // namespace strata
