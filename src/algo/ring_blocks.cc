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

// Walks this member's part of a ring over `blocks`: round by round, slice by
// slice, step by step. Within a round each owner has at most one block, so at
// step k at most one block is this member's (the one with (me - owner - lag)
// mod t == k); flowAt(block, k, &proto) describes its flow (src / dst valid
// where the flow uses the block's), or returns false for none, and each
// flow gets its own phase.
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
          const size_t begin = blockBegin(b.elems, int(slices), int(s));
          const size_t end = blockBegin(b.elems, int(slices), int(s) + 1);
          Flow f;
          if (end > begin && flowAt(b, k, &f)) {
            plan.beginPhase();
            addBlockRange(plan, f, b, begin, end);
          }
          break;
        }
}

}  // namespace

size_t nodeRingSliceBytes(const Topology& t, size_t chunkBytes) {
  // A phase carries at least this many latencies' worth of bytes: its
  // latency then costs at most a quarter of the link's time. On this
  // project's shm defaults (1.5 us, 8 GB/s) that is 48 KB, under the chunk:
  // the rule changes nothing there.
  constexpr double kLatenciesPerPhase = 4;
  const double wanted = kLatenciesPerPhase * t.intra.alphaUs * t.intra.gbps * 1e3;
  const size_t most = t.linkBufferBytes / 2;
  if (wanted <= double(chunkBytes) || most <= chunkBytes) return chunkBytes;
  return std::min(most, size_t(wanted));
}

void emitRingReduceScatter(Plan& plan, const Team& team, const std::vector<RingBlock>& blocks,
                           size_t chunkBytes, bool finalize) {
  const int t = team.size(), me = team.me;
  const int next = team.members[size_t((me + 1) % t)], prev = team.members[size_t((me - 1 + t) % t)];
  walkRing(plan, team, blocks, chunkBytes, 1, [&](const RingBlock& b, int k, Flow* f) {
    if (t == 1) {  // a team of one: the block is already reduced
      *f = copyFlow(b.src, b.dst, 0);
      f->finalize = finalize;
      return !sameRegion(b) || finalize;
    }
    if (k == 0) {  // the chain starts after the owner
      *f = sendFlow(next, b.src, 0);
      return true;
    }
    *f = recvFlow(prev, Ref{}, 0);
    f->reduce = true;
    f->src = b.src;
    if (k == t - 1) {  // the owner: the last reduction lands in dst
      f->dst = b.dst;
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
  walkRing(plan, team, blocks, chunkBytes, 0, [&](const RingBlock& b, int k, Flow* f) {
    if (k == 0) {  // the holder: its copy (if elsewhere) and the first send, in one pass
      *f = copyFlow(b.src, b.dst, 0);
      if (sameRegion(b)) f->dst = Ref{};
      if (t > 1) f->forwardPeer = next;
      return f->dst.valid() || f->forwardPeer >= 0;
    }
    *f = recvFlow(prev, b.dst, 0);
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


void addBlockRange(Plan& plan, const Flow& proto, const RingBlock& b, size_t begin, size_t end) {
  const size_t e = plan.elemSize;
  const size_t perRun = b.runs > 1 ? b.elems / b.runs : b.elems;
  const bool contiguous = b.runs <= 1 || ((!proto.src.valid() || b.srcStride == perRun * e) &&
                                          (!proto.dst.valid() || b.dstStride == perRun * e));
  // Elements [from, to) of the runs starting at run `run`, `runs` of them (each whole when runs > 1).
  auto add = [&](size_t run, size_t from, size_t to, size_t runs) {
    Flow f = proto;
    if (proto.src.valid()) f.src = plus(b.src, run * b.srcStride + from * e);
    if (proto.dst.valid()) f.dst = plus(b.dst, run * b.dstStride + from * e);
    f.bytes = (to - from) * e * runs;
    f.runs = uint32_t(runs);
    f.srcStride = runs > 1 ? b.srcStride : 0;
    f.dstStride = runs > 1 ? b.dstStride : 0;
    plan.add(f);
  };
  if (contiguous || perRun == 0) {
    add(0, begin, end, 1);
    return;
  }
  size_t run = begin / perRun, at = begin % perRun;
  if (at > 0) {  // the rest of a run
    size_t stop = std::min(end - run * perRun, perRun);
    add(run, at, stop, 1);
    begin = run * perRun + stop;
    ++run;
  }
  size_t whole = (end - begin) / perRun;
  if (whole > 0) add(run, 0, perRun, whole);
  run += whole;
  begin += whole * perRun;
  if (end > begin) add(run, 0, end - begin, 1);  // the start of a run
}

void addPieces(Plan& plan, const Flow& proto, const std::vector<Piece>& pieces) {
  bool any = false;
  Flow cur;
  // Whether p continues `cur` on side `side` (src or dst): as one range, or as
  // its next evenly spaced run (writing that run's stride to *stride).
  auto continues = [&](const Ref& next, const Ref& start, size_t curStride, size_t* stride, bool asRange) {
    if (next.buf != start.buf) return false;
    if (!next.valid()) return true;
    if (asRange) return next.offset == start.offset + cur.bytes;
    if (next.offset <= start.offset) return false;
    *stride = cur.runs > 1 ? curStride : next.offset - start.offset;
    return *stride >= runBytes(cur) && next.offset == start.offset + cur.runs * *stride;
  };
  for (const Piece& p : pieces) {
    if (p.bytes == 0) continue;
    if (any) {
      size_t srcStride = 0, dstStride = 0;
      if (cur.runs == 1 && continues(p.src, cur.src, 0, &srcStride, true) &&
          continues(p.dst, cur.dst, 0, &dstStride, true)) {
        cur.bytes += p.bytes;
        continue;
      }
      if (p.bytes == runBytes(cur) && continues(p.src, cur.src, cur.srcStride, &srcStride, false) &&
          continues(p.dst, cur.dst, cur.dstStride, &dstStride, false)) {
        cur.srcStride = srcStride;
        cur.dstStride = dstStride;
        cur.runs++;
        cur.bytes += p.bytes;
        continue;
      }
      plan.add(cur);
    }
    cur = proto;
    cur.src = p.src;
    cur.dst = p.dst;
    cur.bytes = p.bytes;
    cur.runs = 1;
    cur.srcStride = cur.dstStride = 0;
    any = true;
  }
  if (any) {
    plan.add(cur);
    return;
  }
  cur = proto;  // nothing to move: one empty flow keeps the descriptor exchange
  if (!pieces.empty()) {
    cur.src = pieces[0].src;
    cur.dst = pieces[0].dst;
  }
  cur.bytes = 0;
  plan.add(cur);
}

}  // namespace strata
