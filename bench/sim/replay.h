// Replays every rank's plan on a SimGrid platform with the executor's
// semantics (src/exec/executor.cc): a rank runs its phases in order; the
// flows of a phase progress together; each flow moves its bytes in fragments
// of kMaxFragment (a tapered Send's smaller at its end: fragmentBytes),
// streamed back to back to its peer; a received fragment is
// reduced (at the rank's memory rate) and then forwarded, and sent on by the
// Sends that trail its flow (Flow::trails), so receiving, reducing and
// forwarding overlap as they do in the executor; several flows
// to one peer in one phase go one after the other, as on one channel.
//
// Latency: the platform's links are set to zero latency for the replay and
// each pair's route latency is kept aside; a fragment is usable by its
// receiver that latency after its transfer ended. So a stream's fragments
// follow each other at the link's pace, a sender never waits for the latency
// (its send completes into the peer's buffer, as on a socket or a shared
// memory ring), and each hop of a forward adds one latency. Bandwidth is
// SimGrid's flow-level max-min sharing (CM02, no TCP factors) of every link a
// fragment crosses. A per-message cost (ReplayInput::gapS) spaces the
// fragments leaving a node.
#pragma once

#include <functional>
#include <vector>

#include "replay_plan.h"
#include "symmetry.h"

namespace simgrid::s4u {
class Host;
}

namespace strata::sim {

struct ReplayInput {
  std::vector<simgrid::s4u::Host*> hosts;  // rank -> host
  std::vector<ReplayPlan> plans;           // rank -> its plan
  double memoryGbps = 20;                  // what a reduction costs per byte (3 bytes of traffic)
  std::function<double(int from, int to)> latencyS;  // a route's latency, seconds
  std::vector<double> startDelayS;         // rank -> how late it calls (empty: none)
  // What each message leaving a node costs its node beyond the latency (the
  // cost model's gap, LinkParams::gapUs): a node injects one fragment at a
  // time into the network, gapS apart, so k fragments leaving at once start
  // over (k-1) gaps. 0: none (the platform's links alone).
  double gapS = 0;
  std::vector<int> nodeOf;                 // rank -> node (with gapS)
  std::vector<double> injectorFree;        // node -> when it may inject its next fragment (the replay's state)
  // Symmetric replay (symmetry.h): plans and hosts are node 0's ranks' only,
  // in a cluster of symmetricNodes nodes of perNode ranks; a fragment to a
  // rank on another node goes to farHosts[its local index] and arrives at
  // node 0's rank of that local index as from its mirror under `symmetry`.
  // 0: a full replay.
  int symmetricNodes = 0, perNode = 1;
  NodeSymmetry symmetry = NodeSymmetry::kShift;
  std::vector<simgrid::s4u::Host*> farHosts;
};

// Runs the simulation (creates one actor per rank; call once per process,
// after the platform is built). Returns each rank's finish time in seconds;
// throws std::runtime_error naming a rank that never finished (plans that
// wait for each other: what would be a hang in a real run).
std::vector<double> replay(ReplayInput& in);

}  // namespace strata::sim
