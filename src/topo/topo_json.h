// The topology as JSON: STRATA_TOPO_DUMP_FILE writes what was detected (and
// the cost model's link parameters), STRATA_TOPO_FILE loads a file of the same
// shape instead of detecting. Only "ranks" (each with "node") is required on
// load; "links" sets the cost model's parameters; "host" is informational.
#pragma once

#include <string>

#include "topo/topology.h"

namespace strata {

std::string topologyToJson(const Topology& t);
void writeTopologyFile(const Topology& t, const std::string& path);
// Throws strataInvalidArgument with a sentence naming the problem.
Topology topologyFromJson(const std::string& text, int nranks, const std::string& origin);
Topology readTopologyFile(const std::string& path, int nranks);

}  // namespace strata
