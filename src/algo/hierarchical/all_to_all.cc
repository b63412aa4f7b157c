// Hierarchical all-to-all, aggregated per node: a node sends one message per
// peer node and column instead of one per peer rank. Block s->d (from rank s
// to rank d) travels:
//  (1) inside s's node, to the rank that carries d's column (d's local index;
//      teams.h), pairwise in L-1 steps; blocks for ranks of s's own node go
//      straight to them;
//  (2) across nodes, each column's carriers exchange pairwise (N-1 steps): the
//      carrier on node m sends to d = node m' [j] the blocks of all L ranks of
//      node m for d in one message, written straight into d's receive buffer.
// So (L-1) + (N-1) steps instead of N*L-1, and each node's link carries the
// same bytes as the flat exchange in L times fewer, larger messages: what
// decides expert-parallel all-to-alls at scale, which are latency-bound. The
// blocks a carrier forwards wait in scratch, ordered so that every message is
// one or a few (strided) flows.
#include <algorithm>

#include "algo/algorithms.h"
#include "algo/compose.h"
#include "algo/hierarchical/teams.h"
#include "algo/log_blocks.h"

namespace strata {

namespace {

// The blocks rank `r` keeps in scratch when it runs in place: those whose
// slot in the buffer is written no later than the step that reads them.
// Steps inside the node (1) write only the slots of the node's ranks, and
// run pairwise as the flat exchange: the block for local rank c is read in
// step (c - me) mod L and its slot written in step (me - c) mod L. Blocks for
// other nodes handed to a local carrier are read in (1), before any slot of
// another node is written. The slots of other nodes' ranks are written in
// (2), in this rank's own column (me, carried first), from node m at step
// (myNode - m) mod N; the blocks this rank sends itself in (2) are those of
// the columns it carries: in column me to node m at step (m - myNode) mod N,
// and in any later column (uneven nodes) after all of column me.
std::vector<int> keptInPlace(const Topology& t, int r) {
  const int nodes = t.nnodes(), myNode = t.nodeOf(r), me = t.place(r).local;
  const std::vector<int>& mine = t.node(myNode);
  const int l = int(mine.size());
  std::vector<int> keep;
  for (int c = 0; c < l; ++c)
    if (c != me && (me - c + l) % l <= (c - me + l) % l) keep.push_back(mine[size_t(c)]);
  for (int j : carriedColumns(t, r))
    for (int m = 0; m < nodes; ++m) {
      if (m == myNode || int(t.node(m).size()) <= j) continue;
      if (j != me || (myNode - m + nodes) % nodes <= (m - myNode + nodes) % nodes) keep.push_back(t.node(m)[size_t(j)]);
    }
  return keep;
}

}  // namespace

void buildHierAllToAll(const CollArgs& a, Plan& plan) {
  const Topology& t = *a.topo;
  const size_t bb = a.count * plan.elemSize;  // one block
  const int nodes = t.nnodes(), myNode = t.nodeOf(a.rank);
  const std::vector<int>& mine = t.node(myNode);
  const int l = int(mine.size()), me = t.place(a.rank).local;
  // In place, a block whose slot is written before (or in the step that)
  // the block is read is kept in scratch first (keptInPlace); the others are
  // read where they lie, and this rank's own block stays put.
  std::vector<Ref> kept(size_t(t.nranks()));
  if (a.inPlace && t.nranks() > 1) {
    const std::vector<int> keep = keptInPlace(t, a.rank);
    if (!keep.empty()) {
      const Ref copies = reserveScratch(plan, bb * keep.size());
      plan.beginPhase();
      for (size_t i = 0; i < keep.size(); ++i) {
        kept[size_t(keep[i])] = plus(copies, i * bb);
        plan.add(copyFlow(at(Buf::kSend, size_t(keep[i]) * bb), kept[size_t(keep[i])], bb));
      }
    }
  }
  auto sent = [&](int d) { return kept[size_t(d)].valid() ? kept[size_t(d)] : at(Buf::kSend, size_t(d) * bb); };
  auto received = [&](int s) { return at(Buf::kRecv, size_t(s) * bb); };
  // Staging on a carrier: per carried column j, per other node m' with a
  // rank of local index j, per local rank i of my node, one block.
  const int columns = t.maxLocal();  // (a walk over the nodes)
  std::vector<std::vector<int>> destNodes(static_cast<size_t>(columns));  // m' per column, ascending
  for (int j = 0; j < columns; ++j)
    for (int m = 0; m < nodes; ++m)
      if (m != myNode && int(t.node(m).size()) > j) destNodes[size_t(j)].push_back(m);
  std::vector<Ref> staging(static_cast<size_t>(columns));
  for (int j : carriedColumns(t, a.rank))
    if (!destNodes[size_t(j)].empty())
      staging[size_t(j)] = reserveScratch(plan, destNodes[size_t(j)].size() * size_t(l) * bb);
  auto slot = [&](int j, int m, int i) {
    const std::vector<int>& d = destNodes[size_t(j)];
    const size_t pos = size_t(std::lower_bound(d.begin(), d.end(), m) - d.begin());
    return plus(staging[size_t(j)], (pos * size_t(l) + size_t(i)) * bb);
  };
  // What local rank i hands local rank c in (1), as (block sent, where it lands on c).
  auto handOver = [&](int i, int c, bool asSender) {
    std::vector<Piece> pieces;
    const int s = mine[size_t(i)], d = mine[size_t(c)];
    pieces.push_back(Piece{asSender ? sent(d) : Ref{}, asSender ? Ref{} : received(s), bb});
    for (int j = c; j < columns; j += l)
      for (int m : destNodes[size_t(j)])
        pieces.push_back(Piece{asSender ? sent(t.node(m)[size_t(j)]) : Ref{}, asSender ? Ref{} : slot(j, m, i), bb});
    return pieces;
  };
  if (!a.inPlace) {
    plan.beginPhase();
    plan.add(copyFlow(sent(a.rank), received(a.rank), bb));
  }
  for (int k = 1; k < l; ++k) {  // (1) inside the node
    const int to = (me + k) % l, from = (me - k + l) % l;
    plan.beginPhase();
    addPieces(plan, sendFlow(mine[size_t(to)], Ref{}, 0), handOver(me, to, true));
    addPieces(plan, recvFlow(mine[size_t(from)], Ref{}, 0), handOver(from, me, false));
  }
  // Each step across nodes in slices, one phase each (exchangeSlices of a
  // node's message at most, the same on every rank): slice p of a message is
  // part p of each of its blocks.
  const size_t slices = exchangeSlices(a.topo, a.count * size_t(t.maxLocal()), plan.elemSize);
  const size_t parts = std::min(slices, std::max<size_t>(a.count, 1));
  auto part = [&](Ref r, size_t p) { return plus(r, blockSpan(a.count, int(parts), int(p), plan.elemSize).offset); };
  auto partBytes = [&](size_t p) { return blockSpan(a.count, int(parts), int(p), plan.elemSize).bytes; };
  for (int j : carriedColumns(t, a.rank)) {  // (2) across nodes, column by column
    const Team team = columnTeam(t, j, a.rank);
    for (int k = 1; k < nodes; ++k) {
      const int to = (myNode + k) % nodes, from = (myNode - k + nodes) % nodes;
      const bool sends = int(t.node(to).size()) > j;  // its rank of local index j takes my node's blocks for it
      const bool receives = j < l;  // I am my node's rank of local index j: the blocks of `from`'s ranks for me
      if (!sends && !receives) continue;
      for (size_t p = 0; p < parts; ++p) {
        std::vector<Piece> out, in;
        if (sends)
          for (int i = 0; i < l; ++i)
            out.push_back(Piece{part(i == me ? sent(t.node(to)[size_t(j)]) : slot(j, to, i), p), Ref{}, partBytes(p)});
        if (receives)
          for (int s : t.node(from)) in.push_back(Piece{Ref{}, part(received(s), p), partBytes(p)});
        plan.beginPhase();
        if (sends) addPieces(plan, sendFlow(team.members[size_t(to)], Ref{}, 0), out);
        if (receives) addPieces(plan, recvFlow(team.members[size_t(from)], Ref{}, 0), in);
      }
    }
  }
}

}  // namespace strata
