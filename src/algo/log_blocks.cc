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

void checkBlocks(const Team& team, const std::vector<RingBlock>& blocks) {
  if (blocks.size() != size_t(team.size()))
    fail(strataInternalError, "log-step emitter: %zu blocks for a team of %d", blocks.size(), team.size());
  for (size_t q = 0; q < blocks.size(); ++q)
    if (blocks[q].owner != int(q) || blocks[q].runs > 1)
      fail(strataInternalError, "log-step emitter: block %zu must be one run owned by member %zu", q, q);
}

}  // namespace

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

void emitLogReduceScatter(Plan& plan, const Team& team, const std::vector<RingBlock>& blocks, bool finalize) {
  checkBlocks(team, blocks);
  const int t = team.size(), me = team.me;
  const size_t e = plan.elemSize;
  const RingBlock& own = blocks[size_t(me)];
  if (t == 1) {
    if (!sameRegion(own) || finalize) {
      plan.beginPhase();
      plan.add(copyFlow(own.src, own.dst, own.elems * e)).finalize = finalize;
    }
    return;
  }
  const std::vector<LogStep> steps = logReduceScatterSteps(t, me);
  // Where each block's partial sum goes: its dst, or scratch reserved here
  // (in block order, so that neighbouring partials stay one range).
  std::vector<Ref> target(static_cast<size_t>(t));
  std::vector<bool> reduced(static_cast<size_t>(t), false);
  for (const LogStep& s : steps)
    for (int q : s.received) reduced[size_t(q)] = true;
  size_t scratch = 0;
  for (int q = 0; q < t; ++q)
    if (reduced[size_t(q)] && !blocks[size_t(q)].dst.valid()) scratch += blocks[size_t(q)].elems * e;
  Ref base = scratch ? reserveScratch(plan, scratch) : Ref{};
  for (int q = 0; q < t; ++q) {
    const RingBlock& b = blocks[size_t(q)];
    if (b.dst.valid()) {
      target[size_t(q)] = b.dst;
    } else if (reduced[size_t(q)]) {
      target[size_t(q)] = base;
      base = plus(base, b.elems * e);
    }
  }
  std::vector<Ref> current(static_cast<size_t>(t));  // where my partial of each block is now
  for (int q = 0; q < t; ++q) current[size_t(q)] = blocks[size_t(q)].src;
  for (size_t i = 0; i < steps.size(); ++i) {
    const LogStep& s = steps[i];
    plan.beginPhase();
    std::vector<Piece> out, in;
    for (int q : s.sent) out.push_back(Piece{current[size_t(q)], Ref{}, blocks[size_t(q)].elems * e});
    for (int q : s.received) in.push_back(Piece{current[size_t(q)], target[size_t(q)], blocks[size_t(q)].elems * e});
    addPieces(plan, sendFlow(team.members[size_t(s.sendTo)], Ref{}, 0), out);
    Flow r = recvFlow(team.members[size_t(s.recvFrom)], Ref{}, 0);
    r.reduce = true;
    r.finalize = finalize && i + 1 == steps.size();  // the last step receives only my block
    addPieces(plan, r, in);
    for (int q : s.received) current[size_t(q)] = target[size_t(q)];
  }
}

void emitLogAllGather(Plan& plan, const Team& team, const std::vector<RingBlock>& blocks) {
  checkBlocks(team, blocks);
  const int t = team.size(), me = team.me;
  const size_t e = plan.elemSize;
  const RingBlock& own = blocks[size_t(me)];
  const std::vector<LogStep> steps = logAllGatherSteps(t, me);
  // My block: copied into place and sent in the same pass (the first step
  // sends only it).
  Flow first = copyFlow(own.src, own.dst, own.elems * e);
  if (sameRegion(own)) first.dst = Ref{};
  if (steps.empty()) {
    if (first.dst.valid()) {
      plan.beginPhase();
      plan.add(first);
    }
    return;
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    const LogStep& s = steps[i];
    plan.beginPhase();
    if (i == 0) {
      first.forwardPeer = team.members[size_t(s.sendTo)];
      plan.add(first);
    } else {
      std::vector<Piece> out;
      for (int q : s.sent) out.push_back(Piece{blocks[size_t(q)].dst, Ref{}, blocks[size_t(q)].elems * e});
      addPieces(plan, sendFlow(team.members[size_t(s.sendTo)], Ref{}, 0), out);
    }
    std::vector<Piece> in;
    for (int q : s.received) in.push_back(Piece{Ref{}, blocks[size_t(q)].dst, blocks[size_t(q)].elems * e});
    addPieces(plan, recvFlow(team.members[size_t(s.recvFrom)], Ref{}, 0), in);
  }
}

void emitLogAllReduceInPlace(Plan& plan, const Team& team, Ref buf, size_t elems, size_t, bool finalize) {
  const int t = team.size();
  std::vector<RingBlock> blocks(static_cast<size_t>(t));
  for (int q = 0; q < t; ++q) {
    RingBlock& b = blocks[size_t(q)];
    const size_t begin = blockBegin(elems, t, q);
    b.owner = q;
    b.src = b.dst = plus(buf, begin * plan.elemSize);
    b.elems = blockBegin(elems, t, q + 1) - begin;
  }
  emitLogReduceScatter(plan, team, blocks, finalize);
  emitLogAllGather(plan, team, blocks);
}

}  // namespace strata
