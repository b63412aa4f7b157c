#include "algo/hierarchical/node_fanin.h"

#include <algorithm>
#include <map>

#include "algo/algorithms.h"
#include "algo/hierarchical/node_fanout.h"

namespace strata {

namespace {

// A piece of a column's sums that a flow reads, within one block: where in
// the sums (offset from their start), where in a send buffer, where the
// reading flow writes it (its dst, when it has one), how long.
struct SumPiece {
  size_t sum = 0, send = 0, dst = 0, bytes = 0;
};

// Equal pieces evenly spaced: `runs` of `run` bytes, strided in all three places.
struct SumGroup {
  size_t sum = 0, send = 0, dst = 0;
  size_t sumStride = 0, sendStride = 0, dstStride = 0;
  size_t run = 0;
  uint32_t runs = 0;
  size_t bytes() const { return run * runs; }
};

// The sums a flow reads, in the order it reads them, cut at the blocks' ends
// (a block lies elsewhere in the send buffer than its neighbour). Empty when
// the flow reads no sums.
std::vector<SumPiece> sumPieces(const Flow& f, const NodeColumnSums& c) {
  const size_t total = c.sendOffset.size() * c.blockBytes;
  if (f.bytes == 0 || f.src.buf != c.sums.buf || f.src.offset < c.sums.offset ||
      f.src.offset >= c.sums.offset + total)
    return {};
  std::vector<SumPiece> pieces;
  for (uint32_t r = 0; r < f.runs; ++r) {
    size_t at = f.src.offset - c.sums.offset + r * f.srcStride;
    size_t dst = f.dst.valid() ? f.dst.offset + r * f.dstStride : 0;
    for (size_t left = runBytes(f); left > 0;) {
      const size_t block = at / c.blockBytes, within = at % c.blockBytes;
      const size_t n = std::min(left, c.blockBytes - within);
      pieces.push_back({at, c.sendOffset[block] + within, dst, n});
      at += n;
      dst += n;
      left -= n;
    }
  }
  return pieces;
}

// Consecutive pieces as few evenly spaced groups as they allow (`withDst`:
// the reading flow's destinations must be evenly spaced too).
std::vector<SumGroup> grouped(const std::vector<SumPiece>& pieces, bool withDst) {
  std::vector<SumGroup> groups;
  for (const SumPiece& p : pieces) {
    if (!groups.empty()) {
      SumGroup& g = groups.back();
      const size_t last = g.runs - 1;
      const size_t sum = g.sum + last * g.sumStride, send = g.send + last * g.sendStride,
                   dst = g.dst + last * g.dstStride;
      const bool after = g.run == p.bytes && p.sum > sum && p.send > send && (!withDst || p.dst > dst);
      if (after && g.runs == 1) {
        g.sumStride = p.sum - g.sum;
        g.sendStride = p.send - g.send;
        g.dstStride = withDst ? p.dst - g.dst : 0;
        g.runs = 2;
        continue;
      }
      if (after && p.sum - sum == g.sumStride && p.send - send == g.sendStride &&
          (!withDst || p.dst - dst == g.dstStride)) {
        g.runs++;
        continue;
      }
    }
    groups.push_back(SumGroup{p.sum, p.send, p.dst, 0, 0, 0, p.bytes, 1});
  }
  return groups;
}

// The byte ranges of a column's sums read so far: a flow's first reading of
// some of them must wait for the node's contributions there.
class SumsRead {
 public:
  // A flow's pieces in groups of its first readings and of its later ones,
  // in the flow's order: each group, and whether it is a first reading.
  // Marks them all read.
  std::vector<std::pair<SumGroup, bool>> readBy(const std::vector<SumPiece>& pieces, bool withDst) {
    std::vector<std::pair<std::vector<SumPiece>, bool>> runs;  // consecutive pieces alike
    for (const SumPiece& p : pieces)
      for (size_t at = 0; at < p.bytes;) {
        size_t n;
        const bool first = fresh(p.sum + at, p.bytes - at, &n);
        if (runs.empty() || runs.back().second != first) runs.emplace_back(std::vector<SumPiece>{}, first);
        runs.back().first.push_back({p.sum + at, p.send + at, p.dst + at, n});
        at += n;
      }
    std::vector<std::pair<SumGroup, bool>> parts;
    for (const auto& [alike, first] : runs)
      for (const SumGroup& g : grouped(alike, withDst)) parts.emplace_back(g, first);
    for (const SumPiece& p : pieces) mark(p.sum, p.sum + p.bytes);
    return parts;
  }

 private:
  // Whether byte `begin` was not read yet; *n: how many bytes from it are alike.
  bool fresh(size_t begin, size_t bytes, size_t* n) const {
    auto it = ranges_.upper_bound(begin);
    if (it != ranges_.begin() && std::prev(it)->second > begin) {
      *n = std::min(bytes, std::prev(it)->second - begin);
      return false;
    }
    *n = it != ranges_.end() ? std::min(bytes, it->first - begin) : bytes;
    return true;
  }
  void mark(size_t begin, size_t end) {
    auto it = ranges_.upper_bound(begin);
    if (it != ranges_.begin() && std::prev(it)->second >= begin) --it;
    while (it != ranges_.end() && it->first <= end) {
      begin = std::min(begin, it->first);
      end = std::max(end, it->second);
      it = ranges_.erase(it);
    }
    ranges_[begin] = end;
  }
  std::map<size_t, size_t> ranges_;  // begin -> end, disjoint
};

Ref inSums(const NodeColumnSums& c, size_t offset) { return Ref{c.sums.buf, c.sums.offset + offset}; }

// A flow on the strided places of `g`.
Flow onGroup(Flow f, const SumGroup& g, Ref src, size_t srcStride, Ref dst, size_t dstStride) {
  f.bytes = g.bytes();
  f.runs = g.runs;
  f.src = src;
  f.dst = dst;
  f.srcStride = g.runs > 1 ? srcStride : 0;
  f.dstStride = g.runs > 1 ? dstStride : 0;
  return f;
}

}  // namespace

void emitFannedInColumns(Plan& plan, const Team& local, const std::vector<NodeColumnSums>& columns) {
  const NodeColumnSums& carried = columns[size_t(local.me)];
  for (const NodeColumnSums& c : columns) checkAlignedWith(c.across, carried.across);
  std::vector<SumsRead> read(columns.size());
  const int me = local.members[size_t(local.me)];
  for (size_t p = 0; p < carried.across.phases.size(); ++p) {
    plan.beginPhase();
    // My column: before each first reading of its sums, the node's other
    // ranks' contributions summed onto mine as they come; the reading trails the last.
    const Phase& ph = carried.across.phases[p];
    for (uint32_t i = ph.first; i < ph.first + ph.count; ++i) {
      const Flow& f = carried.across.flows[i];
      const std::vector<std::pair<SumGroup, bool>> parts =
          read[size_t(local.me)].readBy(sumPieces(f, carried), f.dst.valid());
      if (std::none_of(parts.begin(), parts.end(), [](const auto& part) { return part.second; })) {
        plan.add(f);
        continue;
      }
      for (const auto& [g, first] : parts) {
        int32_t last = -1;
        for (int q : local.members) {
          if (!first) break;
          if (q == me) continue;
          const bool mine = last < 0;  // the first sums my own contribution with q's
          Flow in = onGroup(recvFlow(q, Ref{}, 0), g, mine ? at(Buf::kSend, g.send) : inSums(carried, g.sum),
                            mine ? g.sendStride : g.sumStride, inSums(carried, g.sum), g.sumStride);
          in.reduce = true;
          in.trails = last;
          last = int32_t(plan.phases.back().count);
          plan.add(in);
        }
        Flow reading = onGroup(f, g, inSums(carried, g.sum), g.sumStride,
                               f.dst.valid() ? Ref{f.dst.buf, g.dst} : Ref{}, g.dstStride);
        reading.trails = last;
        plan.add(reading);
      }
    }
    // My contributions to the sums the node's other carriers read first in this phase.
    for (size_t j = 0; j < columns.size(); ++j) {
      if (int(j) == local.me) continue;
      const NodeColumnSums& c = columns[j];
      const Phase& theirs = c.across.phases[p];
      for (uint32_t i = theirs.first; i < theirs.first + theirs.count; ++i)
        for (const auto& [g, first] : read[j].readBy(sumPieces(c.across.flows[i], c), c.across.flows[i].dst.valid()))
          if (first) {
            Flow out = onGroup(sendFlow(c.carrier, Ref{}, 0), g, at(Buf::kSend, g.send), g.sendStride, Ref{}, 0);
            out.rampsUp = true;  // the carrier sums it and sends the sum on as it lands
            plan.add(out);
          }
    }
  }
}

}  // namespace strata
