// The hierarchical all-gather's two stages run side by side: each carrier's
// exchange across nodes, and the spreading of every column to the other ranks
// of its node. Every block a carrier receives across nodes goes on to each
// other rank of its node in the next phase, beside that phase's exchange (all
// of it there by then), and in the last phase as it arrives (Sends that trail
// the receive: Flow::trails); its own block goes to them in the first phase.
// In the same phases each rank receives its node's other columns from their
// carriers. The node's links carry what a ring inside the node would (each
// rank sends L-1 copies of what it carries), but while the network's links
// carry theirs, instead of after them. Why a phase late but for the last: a
// phase ends when its flows do, so a block sent on as it lands holds the
// next step's exchange back by its last packet's way through the node, a
// latency and a packet a phase (a receiver can send on a packet only after
// it landed whole); a phase later it goes while the network is busy anyway.
// What a carrier sends on to a rank of its node goes in plan order (one
// stream per pair of ranks), while its partners across nodes send at once (a
// radix step's): so that one partner's data does not wait behind another's
// until the phase's end, the last phase's receives from several partners are
// cut into pieces of kFanOutPieceBytes taken in turn, partner by partner, and
// each piece goes on as it lands; where the partners taper their sends the
// pieces also end where the packets do, so the turns follow the packets as
// they land (each partner's first, then each one's second, ...). A byte
// stream, the link does not see the cut: each partner still sends its message
// whole.
// No wait can go round in a circle, whatever the links buffer: a rank's
// receives from its node's carriers wait for nothing but their data, so a
// carrier's sends to its node always drain, and the exchange across nodes is
// the plan it was. Applies where every node has the same number of ranks,
// two or more: each rank then carries one column, and the carriers of a
// node take the same phases, so a phase's receives from a carrier are that
// carrier's sends on of the same phase.
#pragma once

#include <vector>

#include "algo/plan.h"
#include "algo/ring_blocks.h"
#include "topo/topology.h"

namespace strata {

constexpr size_t kFanOutPieceBytes = 64 * 1024;

// Whether the hierarchical all-gather and reduce-scatter run the stage inside
// the nodes beside the exchange across them on `t` (fanning out here, in
// node_fanin.h for the reduce-scatter).
bool stagesSideBySide(const Topology& t);

// An empty plan for one column's exchange across nodes, with `outer`'s
// element size, type, operation and rank count (what the emitters read).
Plan columnStagePlan(const Plan& outer);

// Throws strataInternalError unless a column's exchange takes as many phases
// as `carried`'s (equal nodes line them up) and keeps no scratch of its own.
void checkAlignedWith(const Plan& column, const Plan& carried);

// One column of this rank's node: its exchange across nodes as its carrier
// emits it (peers global ranks; the flows that land blocks are the same on
// every rank of the node, as the blocks' places are), where the carrier's own
// block lands, and who the carrier is.
struct NodeColumn {
  Plan across;
  int carrier = -1;
  Ref ownBlock;
};

// Adds the merged phases: `columns[local.me]` is the column this rank
// carries, whose own block is at `mine` (`ownBytes` long, as every column's).
void emitFannedOutColumns(Plan& plan, const Team& local, const std::vector<NodeColumn>& columns, Ref mine,
                          size_t ownBytes);

}  // namespace strata
