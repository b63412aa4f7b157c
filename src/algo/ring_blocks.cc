#include "algo/ring_blocks.h"

#include <algorithm>
#include <map>

#include "algo/algorithms.h"

namespace strata {

namespace {

// Blocks are handled in rounds: round q holds the q-th block of every owner,
// so each step of a round moves at most one block per member and a phase
// never sends more than one slice to a peer (a member with many blocks would
// otherwise send them all before receiving, and overrun the link's buffer).
std::vector<std::vector<size_t>> rounds(const std::vector<RingBlock>& blocks) {
  std::map<int, size_t> seen;
  std::vector<std::vector<size_t>> out;
  for (size_t i = 0; i < blocks.size(); ++i) {
    size_t q = seen[blocks[i].owner]++;
    if (out.size() <= q) out.resize(q + 1);
    out[q].push_back(i);
  }
  return out;
}

size_t slicesFor(const std::vector<RingBlock>& blocks, size_t elemSize, size_t chunkBytes) {
  size_t maxBytes = 0;
  for (const RingBlock& b : blocks) maxBytes = std::max(maxBytes, b.elems * elemSize);
  return sliceCount(maxBytes, chunkBytes);
}

// Elements [begin, end) of slice s of a block.
void sliceOf(const RingBlock& b, size_t slices, size_t s, size_t* begin, size_t* len) {
  *begin = blockBegin(b.elems, int(slices), int(s));
  *len = blockBegin(b.elems, int(slices), int(s) + 1) - *begin;
}

// Walks this member's part of a ring over `blocks`: round by round, slice by
// slice, step by step. Within a round each owner has at most one block, so at
// step k at most one block is this member's (the one with (me - owner - lag)
// mod t == k); flowAt(block, k, offset, bytes, &flow) builds its flow, or
// returns false for none, and each flow gets its own phase.
template <typename FlowAt>
void walkRing(Plan& plan, const Team& team, const std::vector<RingBlock>& blocks, size_t chunkBytes, int lag,
              FlowAt flowAt) {
  const int t = team.size();
  const size_t e = plan.elemSize;
  const size_t slices = slicesFor(blocks, e, chunkBytes);
  for (const std::vector<size_t>& round : rounds(blocks))
    for (size_t s = 0; s < slices; ++s)
      for (int k = 0; k < t; ++k)
        for (size_t bi : round) {
          const RingBlock& b = blocks[bi];
          if ((team.me - b.owner - lag + 2 * t) % t != k) continue;
          size_t begin, len;
          sliceOf(b, slices, s, &begin, &len);
          Flow f;
          if (len > 0 && flowAt(b, k, begin * e, len * e, &f)) {
            plan.beginPhase();
            plan.add(f);
          }
          break;
        }
}

}  // namespace

void emitRingReduceScatter(Plan& plan, const Team& team, const std::vector<RingBlock>& blocks,
                           size_t chunkBytes, bool finalize) {
  const int t = team.size(), me = team.me;
  const int next = team.members[size_t((me + 1) % t)], prev = team.members[size_t((me - 1 + t) % t)];
  walkRing(plan, team, blocks, chunkBytes, 1, [&](const RingBlock& b, int k, size_t off, size_t bytes, Flow* f) {
    if (t == 1) {  // a team of one: the block is already reduced
      *f = copyFlow(plus(b.src, off), plus(b.dst, off), bytes);
      f->finalize = finalize;
      return !sameRef(f->src, f->dst) || finalize;
    }
    if (k == 0) {  // the chain starts after the owner
      *f = sendFlow(next, plus(b.src, off), bytes);
      return true;
    }
    *f = recvFlow(prev, Ref{}, bytes);
    f->reduce = true;
    f->src = plus(b.src, off);
    if (k == t - 1) {  // the owner: the last reduction lands in dst
      f->dst = plus(b.dst, off);
      f->finalize = finalize;
    } else {
      f->forwardPeer = next;
    }
    return true;
  });
}

void emitRingAllGather(Plan& plan, const Team& team, const std::vector<RingBlock>& blocks,
                       size_t chunkBytes) {
  const int t = team.size(), me = team.me;
  const int next = team.members[size_t((me + 1) % t)], prev = team.members[size_t((me - 1 + t) % t)];
  walkRing(plan, team, blocks, chunkBytes, 0, [&](const RingBlock& b, int k, size_t off, size_t bytes, Flow* f) {
    if (k == 0) {  // the holder: its copy (if elsewhere) and the first send, in one pass
      *f = copyFlow(plus(b.src, off), plus(b.dst, off), bytes);
      if (sameRef(f->src, f->dst)) f->dst = Ref{};
      if (t > 1) f->forwardPeer = next;
      return f->dst.valid() || f->forwardPeer >= 0;
    }
    *f = recvFlow(prev, plus(b.dst, off), bytes);
    if (k < t - 1) f->forwardPeer = next;
    return true;
  });
}

void emitRingAllReduceInPlace(Plan& plan, const Team& team, Ref buf, size_t elems, size_t chunkBytes,
                              bool finalize) {
  const int t = team.size();
  std::vector<RingBlock> blocks;
  for (int q = 0; q < t; ++q) {
    size_t begin = blockBegin(elems, t, q);
    RingBlock b;
    b.owner = q;
    b.src = b.dst = plus(buf, begin * plan.elemSize);
    b.elems = blockBegin(elems, t, q + 1) - begin;
    blocks.push_back(b);
  }
  emitRingReduceScatter(plan, team, blocks, chunkBytes, finalize);
  emitRingAllGather(plan, team, blocks, chunkBytes);
}

}  // namespace strata
