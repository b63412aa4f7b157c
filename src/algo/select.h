// Chooses the algorithm for a collective (the cost model's fastest for the
// size and topology, or forced with STRATA_ALGO) and builds its plan; builds
// send/recv group plans.
#pragma once

#include <string>
#include <vector>

#include "algo/plan.h"
#include "core/config.h"
#include "topo/topology.h"

namespace strata {

// The plan for one collective on one rank. `desc` goes ahead of the data.
Plan buildCollectivePlan(const CollArgs& args, const OpDesc& desc, const Config& config);

// The algorithms available for a collective (names STRATA_ALGO accepts, plus
// the families "hier", "hier_tree"/"hier_leader").
std::vector<std::string> algorithmNames(Coll coll);

// The cost model's prediction for one algorithm.
struct Prediction {
  std::string algorithm;
  double us = 0;
  bool hierarchical = false;  // crosses the network once per node, not from every rank
  bool automatic = true;      // offered to the selector's choice (else forced only)
  // The prediction with none of the network's latency hidden behind bytes
  // (LinkParams::latencyHidden); negative: the same as `us`.
  double lockstepUs = -1;
  // Messages the busiest node sends across the network per call, where the
  // model counts them (networkMessagesPerNode); negative: not counted.
  double networkMessages = -1;
};
// Predictions of every algorithm that applies to `coll` on `topo`, in the
// selector's table order.
std::vector<Prediction> predictAll(Coll coll, size_t bytes, const Topology& topo, size_t chunkBytes,
                                   int root = 0);
// The selector's pick among them (index), of those offered to it
// (Prediction::automatic; all, if none is): predictions within kTieFraction of
// the fastest are ties, and with `preferHierarchical` (more than one node)
// the one sending the fewest messages across the network wins a tie where the
// model counts them, a hierarchical one elsewhere (see select.cc); otherwise
// the fastest,
// an earlier one keeping its place unless a later one is more than 1% faster,
// or within 1% and with more than 1% less latency to hide (lockstepUs).
// Candidates must not be empty.
constexpr double kTieFraction = 0.03;
size_t pickFastest(const std::vector<Prediction>& candidates, bool preferHierarchical);

// One point-to-point operation of a group.
struct P2POp {
  bool isSend = true;
  int peer = 0;
  const void* sendbuff = nullptr;  // the executor resolves buffers per op
  void* recvbuff = nullptr;
  size_t count = 0;
  strataDataType_t dtype = strataFloat32;
};

// All sends and receives of a group as one phase (they progress together, so
// no ordering of them can deadlock). Buffers are resolved through
// `Plan`-external tables: flow.src/dst offsets index P2POp entries (see exec).
Plan buildP2PPlan(const std::vector<P2POp>& ops, int rank, int nranks);

// The pipeline slice: the configured size, capped at half a link's capacity so
// that a slice sent ahead of the matching receive can never block (deadlock).
size_t pipelineSliceBytes(size_t configured, size_t linkCapacity);

// Names accepted by STRATA_ALGO, and the threshold summary for INFO logs.
std::string algorithmSummary(const Config& config, const Topology& topo);

}  // namespace strata
