// Synthetic clusters for plan and cost-model tests, and the collectives
// they sweep. cluster(): `nodes` nodes of
// `perNode` ranks (uneven: node m gets 1 + (5m mod perNode) ranks), with
// links of 1 us / 100 GB/s inside a node and 15 us / 50 GB/s between nodes.
#pragma once

#include <vector>

#include "algo/plan.h"
#include "topo/topology.h"

namespace strata::test {

// The collectives the algorithms build plans for.
inline constexpr Coll kColls[] = {Coll::kAllReduce, Coll::kReduceScatter, Coll::kAllGather,
                                  Coll::kBroadcast,  Coll::kReduce,        Coll::kAllToAll};

inline Topology cluster(int nodes, int perNode, bool uneven = false) {
  std::vector<long long> ids;
  for (int m = 0; m < nodes; ++m)
    for (int i = 0; i < (uneven ? 1 + (m * 5) % perNode : perNode); ++i) ids.push_back(m);
  Topology t = Topology::fromNodeIds(ids);
  t.intra = LinkParams{1, 100, "test"};
  t.inter = LinkParams{15, 50, "test"};
  return t;
}

}  // namespace strata::test
