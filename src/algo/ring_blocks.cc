#include "algo/ring_blocks.h"

#include <algorithm>
#include <map>

#include "algo/algorithms.h"

namespace strata {

namespace {

Ref plus(Ref r, size_t bytes) { return Ref{r.buf, r.offset + bytes}; }

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

}  // namespace

void emitRingReduceScatter(Plan& plan, const Team& team, const std::vector<RingBlock>& blocks,
                           size_t chunkBytes, bool finalize) {
  const int t = team.size(), me = team.me;
  const size_t e = plan.elemSize;
  const int next = team.members[size_t((me + 1) % t)], prev = team.members[size_t((me - 1 + t) % t)];
  const size_t slices = slicesFor(blocks, e, chunkBytes);
  for (const std::vector<size_t>& round : rounds(blocks))
  for (size_t s = 0; s < slices; ++s) {
    for (int k = 0; k < t; ++k) {
      bool begun = false;
      for (size_t bi : round) {
        const RingBlock& b = blocks[bi];
        if ((me - b.owner - 1 + 2 * t) % t != k) continue;  // my step for this block
        size_t begin, len;
        sliceOf(b, slices, s, &begin, &len);
        if (len == 0) continue;
        Flow f;
        if (t == 1) {
          f = copyFlow(plus(b.src, begin * e), plus(b.dst, begin * e), len * e);
          f.finalize = finalize;
          if (sameRef(f.src, f.dst) && !finalize) continue;
        } else if (k == 0) {
          f = sendFlow(next, plus(b.src, begin * e), len * e);
        } else {
          f = recvFlow(prev, Ref{}, len * e);
          f.reduce = true;
          f.src = plus(b.src, begin * e);
          if (k == t - 1) {
            f.dst = plus(b.dst, begin * e);
            f.finalize = finalize;
          } else {
            f.forwardPeer = next;
          }
        }
        if (!begun) plan.beginPhase();
        begun = true;
        plan.add(f);
      }
    }
  }
}

void emitRingAllGather(Plan& plan, const Team& team, const std::vector<RingBlock>& blocks,
                       size_t chunkBytes) {
  const int t = team.size(), me = team.me;
  const size_t e = plan.elemSize;
  const int next = team.members[size_t((me + 1) % t)], prev = team.members[size_t((me - 1 + t) % t)];
  const size_t slices = slicesFor(blocks, e, chunkBytes);
  for (const std::vector<size_t>& round : rounds(blocks))
  for (size_t s = 0; s < slices; ++s) {
    for (int k = 0; k < t; ++k) {
      bool begun = false;
      for (size_t bi : round) {
        const RingBlock& b = blocks[bi];
        if ((me - b.owner + t) % t != k) continue;
        size_t begin, len;
        sliceOf(b, slices, s, &begin, &len);
        if (len == 0) continue;
        Flow f;
        if (k == 0) {  // the holder: its copy (if elsewhere) and the first send, in one pass
          f = copyFlow(plus(b.src, begin * e), plus(b.dst, begin * e), len * e);
          if (sameRef(f.src, f.dst)) f.dst = Ref{};
          if (t > 1) f.forwardPeer = next;
          if (!f.dst.valid() && f.forwardPeer < 0) continue;
        } else {
          f = recvFlow(prev, plus(b.dst, begin * e), len * e);
          if (k < t - 1) f.forwardPeer = next;
        }
        if (!begun) plan.beginPhase();
        begun = true;
        plan.add(f);
      }
    }
  }
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
