// Symmetric replay: a cluster of equal nodes whose plans are all node 0's
// moved by a symmetry of the node indices runs the same on every node, so
// replaying node 0's ranks alone tells the whole cluster's time. Two
// symmetries: shifts (node n's rank talks to node n + s where node 0's talks
// to node s, with the same bytes, phases and flags: rings, radix exchanges)
// and, on a power of two of nodes, exclusive or (node n's talks to n ^ s:
// recursive halving and doubling). What node 0 sends to node s stands, on
// arrival, for what node 0's mirror of s sends to node 0 (-s under shifts, s
// under exclusive or): the replay routes it out of node 0's NIC and back in through it
// (platform.h, buildSymmetricPlatform), so node 0's links carry both
// directions of every exchange, as each node's do in the full cluster. The
// links between the switches are not replayed: that holds where they never
// limit a flow (one switch; a fat-tree of full bisection).
#pragma once

#include <functional>
#include <string>

#include "replay_plan.h"

namespace strata::sim {

enum class NodeSymmetry { kShift, kXor };
const char* symmetryName(NodeSymmetry s);

// The node whose message to node 0 node 0's message to node `to` stands for.
inline int mirrorNode(int to, int nodes, NodeSymmetry s) {
  return s == NodeSymmetry::kXor ? to : (nodes - to % nodes) % nodes;
}

// "" when every node's plans are node 0's moved by `s`, checked on a sample
// of nodes (1, 2, the middle one, the last two and a few spread between):
// flow for flow (*exact), or at least phase for phase the same bytes to the
// same peers with the same flags, cut into flows otherwise (a node whose
// blocks wrap past the last node's sends a message as two runs of flows
// where node 0 sends one: the same bytes, a few more fragments; *exact
// false). Otherwise a sentence naming the first rank and phase that differ.
// planOf(rank) builds that rank's ReplayPlan.
std::string symmetryMismatch(const std::function<ReplayPlan(int rank)>& planOf, int nodes, int perNode,
                             NodeSymmetry s, bool* exact);

}  // namespace strata::sim
