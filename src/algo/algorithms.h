// One builder per algorithm (one file each, under src/algo/<collective>/).
// Each appends the flows of one rank's part of the collective to `plan`.
#pragma once

#include "algo/plan.h"

namespace strata {

void buildRingAllReduce(const CollArgs& a, Plan& plan);
void buildRecursiveDoublingAllReduce(const CollArgs& a, Plan& plan);
void buildRingReduceScatter(const CollArgs& a, Plan& plan);
void buildRecursiveHalvingReduceScatter(const CollArgs& a, Plan& plan);
void buildRingAllGather(const CollArgs& a, Plan& plan);
void buildRecursiveDoublingAllGather(const CollArgs& a, Plan& plan);
void buildChainBroadcast(const CollArgs& a, Plan& plan);
void buildTreeBroadcast(const CollArgs& a, Plan& plan);
void buildChainReduce(const CollArgs& a, Plan& plan);
void buildTreeReduce(const CollArgs& a, Plan& plan);
void buildPairwiseAllToAll(const CollArgs& a, Plan& plan);

// Hierarchical (src/algo/hierarchical/): need CollArgs::topo.
void buildHierRingAllReduce(const CollArgs& a, Plan& plan);
void buildHierHalvingAllReduce(const CollArgs& a, Plan& plan);
void buildHierLeaderAllReduce(const CollArgs& a, Plan& plan);
void buildHierRingReduceScatter(const CollArgs& a, Plan& plan);
void buildHierHalvingReduceScatter(const CollArgs& a, Plan& plan);
void buildHierRadixReduceScatter(const CollArgs& a, Plan& plan);
void buildHierRingAllGather(const CollArgs& a, Plan& plan);
void buildHierHalvingAllGather(const CollArgs& a, Plan& plan);
void buildHierRadixAllGather(const CollArgs& a, Plan& plan);
void buildHierAllToAll(const CollArgs& a, Plan& plan);
void buildBruckAllToAll(const CollArgs& a, Plan& plan);
// The blocks step k of Bruck's all-to-all on n ranks moves (the slots whose
// index has bit k set): the plan and the cost model both count them.
size_t bruckBlocksMoved(int n, int k);
void buildHierChainBroadcast(const CollArgs& a, Plan& plan);
void buildHierTreeBroadcast(const CollArgs& a, Plan& plan);
void buildHierChainReduce(const CollArgs& a, Plan& plan);
void buildHierTreeReduce(const CollArgs& a, Plan& plan);
// Outer pipeline slices of the hierarchical rings whose data is cut into
// `columns` parts (the same on every rank; the cost model uses them too).
class Topology;
size_t hierOuterSlices(const Topology& t, size_t maxPartBytes, size_t chunkBytes, int columns);
size_t hierBlockSlices(const Topology& t, size_t blockBytes, size_t chunkBytes);
// Whether the flat pairwise all-to-all takes its steps node by node (equal
// nodes, a rail for at most two of a node's ranks) rather than in rank order
// (all_to_all/pairwise.cc; the cost model follows it).
bool pairwiseGoesNodeByNode(const Topology& t);

// How many pipeline slices a block of `bytes` is cut into.
inline size_t sliceCount(size_t bytes, size_t chunkBytes) {
  size_t n = (bytes + chunkBytes - 1) / chunkBytes;
  return n == 0 ? 1 : n;
}

// Helpers for flow construction.
inline Ref at(Buf b, size_t offset) { return Ref{b, offset}; }
// `r` moved on by `bytes`.
inline Ref plus(Ref r, size_t bytes) { return Ref{r.buf, r.offset + bytes}; }
inline Flow sendFlow(int peer, Ref src, size_t bytes) {
  Flow f;
  f.kind = FlowKind::kSend;
  f.peer = peer;
  f.src = src;
  f.bytes = bytes;
  return f;
}
inline Flow recvFlow(int peer, Ref dst, size_t bytes) {
  Flow f;
  f.kind = FlowKind::kRecv;
  f.peer = peer;
  f.dst = dst;
  f.bytes = bytes;
  return f;
}
inline Flow copyFlow(Ref src, Ref dst, size_t bytes) {
  Flow f;
  f.kind = FlowKind::kCopy;
  f.src = src;
  f.dst = dst;
  f.bytes = bytes;
  return f;
}

}  // namespace strata
