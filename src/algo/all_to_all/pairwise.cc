// Pairwise-exchange all-to-all: in step k every rank sends to rank+k and
// receives from rank-k at the same time, so each step is a perfect matching.
//
// Where every node has the same number of ranks and its network has a rail
// (NIC) for every rank, or for every two, the steps go node by node instead:
// first the steps inside the node, then for each node distance d the L steps
// to node m+d (local index j to j+q). In rank order the steps inside a node
// come at a different point for each rank (rank j of a node has them first
// or last), and since they are fast, a node's ranks reach their first steps
// across nodes at once with the same receiver (rank j's first remote peer is
// rank L of the next node, for every j). In strata-sim on 2 nodes x 8 ranks
// with a rail per rank that many-to-one start kept the rails a third busy
// (3.25x the time the steps need; 1.5x on 8 nodes), and the cost model could
// not see it. Node by node, every step across nodes pairs node m's ranks one
// to one with node m+d's: the same replays take the model's time exactly.
// In rank order the ranks drift apart, which keeps a shared link busy while
// each waits out a latency: with four ranks or more on a rail (one link per
// node included) that is worth more, so there the order stays (replayed at
// 2 rails x 8 ranks, node by node took 1.03-1.24x the rank order's time).
#include "algo/algorithms.h"
#include "algo/log_blocks.h"
#include "topo/topology.h"

namespace strata {

bool pairwiseGoesNodeByNode(const Topology& t) {
  return t.nnodes() > 1 && t.uniform() && t.inter.rails > 1 && t.maxLocal() <= 2 * t.inter.rails;
}

namespace {

// The peers of each step (to, from), in the order this rank takes them.
std::vector<std::pair<int, int>> pairwiseOrder(const CollArgs& a) {
  const int n = a.nranks, r = a.rank;
  std::vector<std::pair<int, int>> steps;
  const Topology* t = a.topo;
  if (t && pairwiseGoesNodeByNode(*t)) {
    const int nodes = t->nnodes(), l = t->maxLocal(), m = t->nodeOf(r), j = t->place(r).local;
    for (int d = 0; d < nodes; ++d)
      for (int q = 0; q < l; ++q) {
        if (d == 0 && q == 0) continue;
        steps.emplace_back(t->node((m + d) % nodes)[size_t((j + q) % l)],
                           t->node((m - d + nodes) % nodes)[size_t((j - q + l) % l)]);
      }
    return steps;
  }
  for (int k = 1; k < n; ++k) steps.emplace_back((r + k) % n, (r - k + n) % n);
  return steps;
}

}  // namespace

void buildPairwiseAllToAll(const CollArgs& a, Plan& plan) {
  const int n = a.nranks, r = a.rank;
  const size_t blockBytes = a.count * plan.elemSize;
  const std::vector<std::pair<int, int>> order = pairwiseOrder(a);
  // In place, a block that lands before its own step sends it (or in that
  // very step) is kept in scratch first and sent from there; the others go
  // from where they lie, sent before a later step overwrites them, and this
  // rank's own block stays put. Keeping every block took a copy of the
  // whole buffer (2 ranks: twice the bytes kept).
  std::vector<bool> kept(size_t(n), false);
  if (a.inPlace && n > 1) {
    std::vector<size_t> sendStep(size_t(n), 0), landStep(size_t(n), 0);
    for (size_t j = 0; j < order.size(); ++j) {
      sendStep[size_t(order[j].first)] = j;
      landStep[size_t(order[j].second)] = j;
    }
    plan.scratchBytes = blockBytes * size_t(n);
    plan.beginPhase();
    for (int b = 0; b < n; ++b) {
      if (b == r || landStep[size_t(b)] > sendStep[size_t(b)]) continue;
      kept[size_t(b)] = true;
      plan.add(copyFlow(at(Buf::kSend, size_t(b) * blockBytes), at(Buf::kScratch, size_t(b) * blockBytes), blockBytes));
    }
  }
  if (!a.inPlace) {
    plan.beginPhase();
    plan.add(copyFlow(at(Buf::kSend, size_t(r) * blockBytes), at(Buf::kRecv, size_t(r) * blockBytes),
                      blockBytes));
  }
  // Each step in slices, one phase each (exchangeSlices).
  const size_t slices = n > 1 ? exchangeSlices(a.topo, a.count, plan.elemSize) : 1;
  for (auto [to, from] : order) {
    const Buf source = kept[size_t(to)] ? Buf::kScratch : Buf::kSend;
    for (size_t i = 0; i < slices; ++i) {
      const ByteSpan s = blockSpan(a.count, int(slices), int(i), plan.elemSize);
      plan.beginPhase();
      plan.add(sendFlow(to, at(source, size_t(to) * blockBytes + s.offset), s.bytes));
      plan.add(recvFlow(from, at(Buf::kRecv, size_t(from) * blockBytes + s.offset), s.bytes));
    }
  }
}

}  // namespace strata
