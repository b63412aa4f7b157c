// The flags strata-model and strata-sim share (cluster shape, link
// parameters, sizes), parsed once so that the two tools mean the same thing
// by each flag and can be compared row by row.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "algo/plan.h"
#include "topo/topology.h"

namespace strata {

// A link the tools' flags describe: its numbers are given, and a gap left
// out is none (LinkParams::gapKnown, as STRATA_INTER_LINK's).
inline LinkParams givenLink(double alphaUs, double gbps) {
  LinkParams l{alphaUs, gbps, "configured"};
  l.gapKnown = true;
  return l;
}

struct ModelOptions {
  std::string coll = "all_reduce";
  std::vector<int> nodes{8, 64, 512, 4096};
  int perNode = 8;
  LinkParams intra = givenLink(2.0, 450.0);  // NVLink-class
  // A node's network: 4 x 100 Gbit/s; --rails sets inter.rails (1: one
  // transfer can use all of it).
  LinkParams inter = givenLink(15.0, 50.0);
  double memoryGbps = 2000.0;                   // HBM-class
  size_t minBytes = 8, maxBytes = size_t(1) << 30, factor = 4;
  size_t chunk = 524288;  // --chunk: the pipeline slice, capped as a run caps it (pipelineSliceBytes)
  std::string topoFile;
  bool json = false;
};

// A tool's own flag: given the flag and a way to take its value, returns
// whether it knew the flag.
using ExtraFlag = std::function<bool(const std::string& flag, const std::function<const char*()>& value)>;

// Parses argv into `o`. A bare word is the collective (as nccl-tests'
// binaries are named by it). Bad input (an unknown flag or collective, a
// number that is not one, zero nodes) prints one sentence naming it, prefixed
// by `tool`, then `usage`, and exits with status 2.
void parseModelOptions(int argc, char** argv, const char* tool, const char* usage, ModelOptions& o,
                       const ExtraFlag& extra = {});

// "a,b,c" -> {"a", "b", "c"} (one empty item for "").
std::vector<std::string> splitComma(const std::string& s);

// "64K", "1M", "2G" or a plain number of bytes; exits with status 2 naming
// `flag` when `text` is not a size.
size_t parseSizeFlag(const char* text, const char* tool, const char* flag);
// A collective's name as the tools spell it (all_reduce, reduce_scatter,
// all_gather, broadcast, reduce, alltoall); false when unknown.
bool collFromName(const std::string& name, Coll* out);

// `nodes` nodes of `perNode` ranks, node by node, with the options' links
// (each buffering what the library's default settings give a link).
Topology makeCluster(int nodes, int perNode, const ModelOptions& o);

}  // namespace strata
