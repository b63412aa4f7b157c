#include "symmetry.h"

#include <map>
#include <tuple>
#include <vector>

#include "core/error.h"

namespace strata::sim {

namespace {

// Rank `r` as node `from` sees it, seen from node 0 under `s`: the same
// local index, its node moved as `from` moves to 0 (-1 stays -1: no peer).
int32_t moved(int32_t r, int from, int nodes, int perNode, NodeSymmetry s) {
  if (r < 0) return r;
  const int node = r / perNode, local = r % perNode;
  const int to = s == NodeSymmetry::kXor ? node ^ from : ((node - from) % nodes + nodes) % nodes;
  return int32_t(to * perNode + local);
}

// Node `node`'s rank's plan as node 0's rank of the same local index would
// run it: every peer moved as `s` moves `node` to node 0.
ReplayPlan movedToNode0(ReplayPlan p, int node, int nodes, int perNode, NodeSymmetry s) {
  for (ReplayFlow& f : p.flows) {
    f.peer = moved(f.peer, node, nodes, perNode, s);
    f.forward = moved(f.forward, node, nodes, perNode, s);
  }
  return p;
}

bool sameFlow(const ReplayFlow& a, const ReplayFlow& b) {
  return a.kind == b.kind && a.peer == b.peer && a.forward == b.forward && a.bytes == b.bytes &&
         a.localCopyBytes == b.localCopyBytes && a.trails == b.trails && a.reduce == b.reduce &&
         a.taperTo == b.taperTo && a.rampsUp == b.rampsUp;
}

// A phase's traffic: the bytes of its flows summed per kind, peer, forward
// and flags, however they are cut into flows.
using Traffic = std::map<std::tuple<int, int32_t, int32_t, bool, uint32_t, bool, bool>, uint64_t>;
Traffic trafficOf(const ReplayPlan& p, size_t phase) {
  Traffic t;
  for (uint32_t i = phase ? p.phaseEnd[phase - 1] : 0; i < p.phaseEnd[phase]; ++i) {
    const ReplayFlow& f = p.flows[i];
    t[{int(f.kind), f.peer, f.forward, f.reduce, f.taperTo, f.rampsUp, f.localCopyBytes > 0}] += f.bytes;
  }
  return t;
}

}  // namespace

const char* symmetryName(NodeSymmetry s) { return s == NodeSymmetry::kXor ? "exclusive or" : "shift"; }

std::string symmetryMismatch(const std::function<ReplayPlan(int rank)>& planOf, int nodes, int perNode,
                             NodeSymmetry s, bool* exact) {
  *exact = true;
  if (s == NodeSymmetry::kXor && (nodes & (nodes - 1)) != 0)
    return format("%d nodes are not a power of two, which exclusive or needs", nodes);
  std::vector<int> sample = {1, 2, nodes / 2, nodes - 2, nodes - 1};
  for (int k = 1; k <= 4; ++k) sample.push_back(int((long long)nodes * k / 5 + k));  // spread, off the round numbers
  std::vector<ReplayPlan> base;
  for (int j = 0; j < perNode; ++j) base.push_back(planOf(j));
  for (int node : sample) {
    if (node <= 0 || node >= nodes) continue;
    for (int j = 0; j < perNode; ++j) {
      const int rank = node * perNode + j;
      const ReplayPlan p = movedToNode0(planOf(rank), node, nodes, perNode, s);
      const ReplayPlan& b = base[size_t(j)];
      if (p.phaseEnd.size() != b.phaseEnd.size())
        return format("rank %d's plan has %zu phases, rank %d's %zu", rank, p.phaseEnd.size(), j, b.phaseEnd.size());
      if (*exact) {
        *exact = p.phaseEnd == b.phaseEnd;
        for (size_t i = 0; *exact && i < p.flows.size(); ++i) *exact = sameFlow(p.flows[i], b.flows[i]);
      }
      if (*exact) continue;
      for (size_t ph = 0; ph < p.phaseEnd.size(); ++ph)
        if (trafficOf(p, ph) != trafficOf(b, ph))
          return format("rank %d's phase %zu moves other bytes or to other peers than rank %d's, moved by %s with "
                        "node %d", rank, ph, j, symmetryName(s), node);
    }
  }
  return "";
}

}  // namespace strata::sim
