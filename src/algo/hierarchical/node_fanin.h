// The hierarchical reduce-scatter's two stages run side by side, the mirror
// of node_fanout.h: instead of a ring inside each node that leaves the
// node's partial sums of each column with its carrier before the exchange
// across nodes starts, the other ranks of the node send the carrier their
// contributions to the blocks each phase of that exchange first reads, in
// that phase, and the carrier sums them as they arrive, one contributor
// after the other (Recvs that each trail the last: Flow::trails), while what
// reads the sum (a send to another node, or the reduction of what another
// node sent) trails the last of them. So the network starts on the first
// summed fragment instead of after the whole node stage.
// The sum's order is fixed (the carrier's own contribution, then the node's
// other ranks in local order), so the result is the same from run to run.
// No wait can go round in a circle, whatever the links buffer: what a rank
// sends its node's carriers is all there from the start, and a carrier's
// receives from its node wait only for their data and for each other.
// Applies where stagesSideBySide (node_fanout.h) does.
#pragma once

#include <vector>

#include "algo/plan.h"
#include "algo/ring_blocks.h"
#include "topo/topology.h"

namespace strata {

// One column of this rank's node: its reduce-scatter across nodes as its
// carrier emits it, reading and writing the carrier's partial sums of the
// column (`sums`: its blocks in node order, each `blockBytes` apart, the
// flows' kScratch references counted from there), and where each of those
// blocks lies in every rank's send buffer (sendOffset[index]).
struct NodeColumnSums {
  Plan across;
  int carrier = -1;
  Ref sums;
  size_t blockBytes = 0;
  std::vector<size_t> sendOffset;
};

// Adds the merged phases; `columns[local.me]` is the column this rank carries.
void emitFannedInColumns(Plan& plan, const Team& local, const std::vector<NodeColumnSums>& columns);

}  // namespace strata
