// The cost model: predicts how long each candidate algorithm takes for a
// collective of a given size on a given topology, from the link parameters
// (latency alpha and bandwidth per link class, see topo/topology.h). Like
// NCCL's tuning model it is a sum of per-step costs, but the steps come from
// the algorithm's actual communication pattern on this placement: a step
// costs alpha plus its bytes over the bandwidth of the slowest link it uses,
// where a node's network bandwidth is shared by all streams leaving the node
// at once. The selector runs the fastest prediction; strata-model (bench/)
// uses the same functions to predict clusters this machine cannot run.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "algo/plan.h"
#include "topo/topology.h"

namespace strata {

// Bytes the cost model talks about: the whole vector the collective moves
// (all-reduce/broadcast/reduce: count*elem; reduce-scatter input and
// all-gather output: nranks*count*elem; alltoall: nranks*count*elem).
size_t collectiveBytes(Coll coll, size_t count, size_t elemSize, int nranks);

// Predicted microseconds of `algorithm` (a name from the selector's table)
// for `bytes` on `topo`, with pipeline slices of `chunkBytes`. Negative when
// the algorithm does not apply to the collective.
double predictUs(const std::string& algorithm, Coll coll, size_t bytes, const Topology& topo,
                 size_t chunkBytes, int root = 0);

// The same prediction (`us`) beside the one with none of the network's
// latency hidden behind bytes (`lockstepUs`, as if topo.inter.latencyHidden
// were 0: what the selector breaks ties with), computed once.
struct CostPrediction {
  double us, lockstepUs;
};
CostPrediction predictWithLockstepUs(const std::string& algorithm, Coll coll, size_t bytes, const Topology& topo,
                                     size_t chunkBytes, int root = 0);

// Messages the busiest node sends across the network in one call of
// `algorithm` (not counting slices), where the model counts them: the
// all-to-alls, the one collective whose algorithms differ mostly in this.
// Negative elsewhere. The selector breaks ties with it (select.cc).
double networkMessagesPerNode(const std::string& algorithm, Coll coll, const Topology& topo);

// Whether the hierarchical reduce-scatter or all-gather `algorithm` runs the
// stage inside the nodes beside its exchange across them for `bytes`
// (node_fanout.h, node_fanin.h; the plans ask this): on equal nodes, where
// the model puts that form more than 1% ahead of the stages one after the
// other, which it does not where the bytes are few or the network is what
// takes the time (the form has costs the model does not see: cost_model.cc).
bool stagesSideBySidePay(const std::string& algorithm, Coll coll, size_t bytes, const Topology& topo,
                         size_t chunkBytes);

// How hier_halving's all-reduce of `bytes` crosses nodes (the plans ask
// this). `doubles`: each carried part by recursive doubling of the whole part
// (floor(log2 N) steps of all of it) instead of halving then doubling
// (2 ceil(log2 N) steps of shrinking blocks), where the model puts doubling
// ahead, which it does only where the part is so small that the steps'
// latency is the time (MPICH's allreduce makes the same switch, at a fixed
// 2 KiB). `columns`: the parts the node's sum is cut into, one carrier each:
// K (the most ranks on a node), or 1 where the model puts one message per
// node and step ahead of K queued on the node's link (a measured per-message
// gap, at a few bytes); one column only when doubling. Of these forms the one
// whose prediction (latency hidden as the links hide it) is lowest; ties go
// to halving over doubling of K parts, and to one part (within 1%).
struct HierHalvingAllReduceForm {
  bool doubles = false;
  int columns = 1;
};
HierHalvingAllReduceForm hierHalvingAllReduceForm(size_t bytes, const Topology& topo, size_t chunkBytes);

// How a hierarchical `algorithm` runs for `bytes`: for a reduce-scatter or
// all-gather both answers above at once (a plan asks this once; radix 0: not
// a radix exchange), for hier_halving's all-reduce its form.
struct HierShape {
  bool sideBySide = false;
  int radix = 0;
  HierHalvingAllReduceForm allReduce;
};
HierShape hierShapeFor(const std::string& algorithm, Coll coll, size_t bytes, const Topology& topo,
                       size_t chunkBytes);

// `shape` in words for Plan::shape ("" on one node, where nothing crosses).
std::string describeHierShape(const HierShape& shape, const Topology& topo);

// The radix hier_radix's exchange across nodes takes for a reduce-scatter or
// all-gather of `bytes` (the plans ask this): of radixCandidates(node count)
// (algo/radix_blocks.h), the one the model puts fastest, more partners only
// where they gain more than 1%.
int hierRadixFor(Coll coll, size_t bytes, const Topology& topo, size_t chunkBytes);


// nccl-tests' bus bandwidth (GB/s) for `bytes` moved in `us` microseconds.
double busBandwidth(Coll coll, size_t bytes, int nranks, double us);

}  // namespace strata
