// The teams hierarchical algorithms run on, derived from the topology.
// Columns: the data is split into K = (most ranks on any node) parts; on a
// node with L ranks, part j is carried by local rank j mod L. Column j's team
// is the carrier of part j on every node, one member per node, so the L
// ranks of a node drive L inter-node streams at once (every NIC / connection
// busy); on a node with fewer ranks, a rank carries several columns.
#pragma once

#include <algorithm>
#include <vector>

#include "algo/ring_blocks.h"
#include "topo/topology.h"

namespace strata {

inline int carrierOf(const Topology& t, int node, int column) {
  const std::vector<int>& n = t.node(node);
  return n[size_t(column) % n.size()];
}

// The ranks of `rank`'s node, in local order.
inline Team nodeTeam(const Topology& t, int rank) {
  return Team{t.node(t.nodeOf(rank)), t.place(rank).local};
}

// Column `column`'s team, seen from `rank` (which must carry it).
inline Team columnTeam(const Topology& t, int column, int rank) {
  Team team;
  for (int m = 0; m < t.nnodes(); ++m) team.members.push_back(carrierOf(t, m, column));
  team.me = t.nodeOf(rank);
  return team;
}

// The columns `rank` carries, ascending, of `k` (K unless a plan cuts the
// data into fewer parts: hier_halving's all-reduce of a few bytes takes one).
inline std::vector<int> carriedColumns(const Topology& t, int rank, int k) {
  std::vector<int> cols;
  const int l = int(t.node(t.nodeOf(rank)).size());
  for (int j = t.place(rank).local; j < k; j += l) cols.push_back(j);
  return cols;
}
inline std::vector<int> carriedColumns(const Topology& t, int rank) { return carriedColumns(t, rank, t.maxLocal()); }

// The most of `k` columns any rank carries: ceil(k / fewest ranks on a node).
inline int maxCarried(const Topology& t, int k) {
  int fewest = t.maxLocal();
  for (int m = 0; m < t.nnodes(); ++m) fewest = std::min(fewest, int(t.node(m).size()));
  return (k + fewest - 1) / fewest;
}

// One leader per node: local rank 0, except that `root`'s node is led by `root`.
inline Team leaderTeam(const Topology& t, int root, int rank) {
  Team team;
  for (int m = 0; m < t.nnodes(); ++m)
    team.members.push_back(m == t.nodeOf(root) ? root : t.node(m)[0]);
  team.me = t.nodeOf(rank);
  return team;
}

// The ranks of column `column` (local index `column` on every node that has
// one), in node order.
inline std::vector<int> columnRanks(const Topology& t, int column) {
  std::vector<int> ranks;
  for (int m = 0; m < t.nnodes(); ++m)
    if (int(t.node(m).size()) > column) ranks.push_back(t.node(m)[size_t(column)]);
  return ranks;
}

// A column's blocks in a rank-major buffer, cut into runs of evenly spaced
// ranks: ranks[first + i] = rank0 + i * rankStride for i < count. Node by
// node placement with equal nodes gives one run per column (stride: ranks
// per node), round-robin placement one contiguous run; uneven nodes more.
// The same on every rank, so every member of a team cuts a column alike.
struct ColumnRun {
  int column = 0;
  size_t first = 0, count = 0;  // indices into columnRanks(column)
  int rank0 = 0, rankStride = 1;
};
std::vector<ColumnRun> columnRuns(const Topology& t);

inline bool isLeader(const Topology& t, int root, int rank) {
  return rank == (t.nodeOf(rank) == t.nodeOf(root) ? root : t.node(t.nodeOf(rank))[0]);
}

}  // namespace strata
