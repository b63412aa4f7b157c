// Hierarchical broadcast and reduce.
//  - chain (bandwidth): the flat pipelined chain, but over the ranks in node
//    order, so that it crosses each node boundary once instead of up to once
//    per rank (rank-order chains cross it at every hop under round-robin
//    placement).
//  - tree (latency): a binomial tree among one leader per node (the root
//    leads its own node), then binomial trees inside each node.
#include "algo/algorithms.h"
#include "algo/compose.h"
#include "algo/hierarchical/teams.h"

namespace strata {

namespace {

// All ranks, node by node, starting with the root's node (the root first).
std::vector<int> nodeOrderFromRoot(const Topology& t, int root) {
  std::vector<int> order{root};
  const int first = t.nodeOf(root);
  for (int i = 0; i < t.nnodes(); ++i) {
    int m = (first + i) % t.nnodes();
    for (int r : t.node(m))
      if (r != root) order.push_back(r);
  }
  return order;
}

Team teamOf(std::vector<int> members, int rank) {
  Team team{std::move(members), 0};
  for (size_t i = 0; i < team.members.size(); ++i)
    if (team.members[i] == rank) team.me = int(i);
  return team;
}

}  // namespace

void buildHierChainBroadcast(const CollArgs& a, Plan& plan) {
  CollArgs sub = a;
  sub.root = 0;
  appendStage(plan, buildChainBroadcast, teamOf(nodeOrderFromRoot(*a.topo, a.root), a.rank), sub,
              Rebind{at(Buf::kSend, 0), at(Buf::kRecv, 0), true});
}

void buildHierChainReduce(const CollArgs& a, Plan& plan) {
  // The chain ends at the root: reverse node order, so the root's node comes last.
  std::vector<int> order = nodeOrderFromRoot(*a.topo, a.root);
  std::vector<int> reversed(order.rbegin(), order.rend());
  CollArgs sub = a;
  sub.root = int(reversed.size()) - 1;
  appendStage(plan, buildChainReduce, teamOf(reversed, a.rank), sub,
              Rebind{at(Buf::kSend, 0), at(Buf::kRecv, 0), true});
}

void buildHierTreeBroadcast(const CollArgs& a, Plan& plan) {
  const Topology& t = *a.topo;
  const bool leader = isLeader(t, a.root, a.rank);
  // Non-root leaders pass on what they received (in recvbuff).
  const Ref data = a.rank == a.root ? at(Buf::kSend, 0) : at(Buf::kRecv, 0);
  CollArgs sub = a;
  if (t.nnodes() > 1 && leader) {
    sub.root = t.nodeOf(a.root);
    appendStage(plan, buildTreeBroadcast, leaderTeam(t, a.root, a.rank), sub,
                Rebind{data, at(Buf::kRecv, 0), false});
  }
  Team local = nodeTeam(t, a.rank);
  if (local.size() > 1 || t.nnodes() == 1) {
    const int nodeLeader = leaderTeam(t, a.root, a.rank).members[size_t(t.nodeOf(a.rank))];
    sub.root = t.place(nodeLeader).local;
    appendStage(plan, buildTreeBroadcast, local, sub, Rebind{data, at(Buf::kRecv, 0), false});
  }
}

void buildHierTreeReduce(const CollArgs& a, Plan& plan) {
  const Topology& t = *a.topo;
  const size_t bytes = a.count * plan.elemSize;
  const bool leader = isLeader(t, a.root, a.rank);
  const bool multiNode = t.nnodes() > 1;
  Team local = nodeTeam(t, a.rank);
  CollArgs sub = a;
  // The node's partial result: on the root it is final only with one node.
  Ref nodeSum = at(Buf::kSend, 0);
  if (local.size() > 1 || !multiNode) {
    if (leader) nodeSum = (a.rank == a.root && !multiNode) ? at(Buf::kRecv, 0) : reserveScratch(plan, bytes);
    const int nodeLeader = leaderTeam(t, a.root, a.rank).members[size_t(t.nodeOf(a.rank))];
    sub.root = t.place(nodeLeader).local;
    appendStage(plan, buildTreeReduce, local, sub, Rebind{at(Buf::kSend, 0), nodeSum, !multiNode});
  }
  if (multiNode && leader) {
    sub.root = t.nodeOf(a.root);
    // Only the root has a recvbuff (the tree writes it on the root only).
    Ref out = a.rank == a.root ? at(Buf::kRecv, 0) : nodeSum;
    appendStage(plan, buildTreeReduce, leaderTeam(t, a.root, a.rank), sub, Rebind{nodeSum, out, true});
  }
}

}  // namespace strata
