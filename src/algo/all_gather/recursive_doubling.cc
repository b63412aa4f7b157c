// Log-step all-gather over all ranks: recursive doubling when the world is a
// power of two, Bruck's algorithm otherwise (algo/log_blocks.h).
// ceil(log2 N) steps instead of the ring's N-1, with the same minimal bytes.
// Blocks land in place in the receive buffer and are sent on from there.
#include "algo/algorithms.h"
#include "algo/log_blocks.h"

namespace strata {

void buildRecursiveDoublingAllGather(const CollArgs& a, Plan& plan) {
  const size_t e = plan.elemSize, blockBytes = a.count * e;
  Team team;
  for (int q = 0; q < a.nranks; ++q) team.members.push_back(q);
  team.me = a.rank;
  std::vector<RingBlock> blocks(static_cast<size_t>(a.nranks));
  for (int q = 0; q < a.nranks; ++q) {
    RingBlock& b = blocks[size_t(q)];
    b.owner = q;
    b.dst = at(Buf::kRecv, size_t(q) * blockBytes);
    b.src = q == a.rank && !a.inPlace ? at(Buf::kSend, 0) : b.dst;
    b.elems = a.count;
  }
  emitLogAllGather(plan, team, blocks, linkPhaseBytes(a.topo, a.chunkBytes));
}

}  // namespace strata
