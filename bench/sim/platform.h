// The simulated cluster strata-sim replays plans on: one SimGrid host per
// rank. Built in: ranks of a node on a star (each rank's split-duplex link to
// the node's switch: the intra-node link, NVLink class or this machine's
// shared memory), the node's NIC (split duplex, the inter-node bandwidth of
// all rails together, as strata-model's --inter; or inter.rails links of an
// equal share, local rank i on rail i % rails), and nodes joined by one
// switch or by a two-level fat-tree (leaf switches of `leafNodes` nodes,
// spines giving full bisection, or less with `taper`). Or a SimGrid platform
// file, whose hosts (in name order) are the ranks.
#pragma once

#include <string>
#include <vector>

#include "topo/topology.h"

namespace simgrid::s4u {
class Host;
}

namespace strata::sim {

struct PlatformSpec {
  std::string kind = "fat-tree";  // fat-tree | switch | a platform file
  int nodes = 1, perNode = 1;
  LinkParams intra, inter;
  int leafNodes = 32;        // fat-tree: nodes per leaf switch
  double taper = 1;          // fat-tree: down / up bandwidth of a leaf switch (2: 2:1)
  int slowNode = -1;         // this node's NIC runs at slowFactor of its speed
  double slowFactor = 0.5;
};

// A sentence naming what is wrong with `spec` ("" when it can be built).
std::string checkPlatform(const PlatformSpec& spec);

// Builds the platform in the current SimGrid engine; returns rank -> host.
// Route latencies: intra alpha between ranks of a node, inter alpha between
// nodes (split over the links of the route). Throws std::runtime_error with a
// sentence when a platform file does not parse or has too few hosts.
std::vector<simgrid::s4u::Host*> buildPlatform(const PlatformSpec& spec);

// The symmetric replay's platform (symmetry.h): node 0's ranks (`ranks`,
// local index -> host) and, for each local index, a host standing for that
// rank on any other node (`far`), reached from node 0 through node 0's NIC
// out and back in. One switch between them; the spec's fat-tree, where it has
// full bisection, limits no flow beyond the NICs, so it is not built.
struct SymmetricHosts {
  std::vector<simgrid::s4u::Host*> ranks, far;
};
SymmetricHosts buildSymmetricPlatform(const PlatformSpec& spec);

// Sets every link's latency to zero and returns a function giving a route's
// latency as it was (seconds), for the replay's once-per-flow latency.
struct RouteLatency {
  double operator()(int from, int to) const;
  std::vector<simgrid::s4u::Host*> hosts;
};
RouteLatency takeLatenciesOut(const std::vector<simgrid::s4u::Host*>& hosts);

}  // namespace strata::sim
