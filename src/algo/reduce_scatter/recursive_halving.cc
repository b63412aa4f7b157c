// Log-step reduce-scatter over all ranks: recursive halving when the world is
// a power of two, Bruck's all-gather reversed otherwise (algo/log_blocks.h).
// ceil(log2 N) steps instead of the ring's N-1, with the same minimal bytes:
// the latency algorithm for small and medium sizes. Partial sums of blocks
// passing through this rank live in scratch; the send buffer is only read.
#include "algo/algorithms.h"
#include "algo/log_blocks.h"

namespace strata {

void buildRecursiveHalvingReduceScatter(const CollArgs& a, Plan& plan) {
  const size_t e = plan.elemSize, blockBytes = a.count * e;
  Team team;
  for (int q = 0; q < a.nranks; ++q) team.members.push_back(q);
  team.me = a.rank;
  std::vector<RingBlock> blocks(static_cast<size_t>(a.nranks));
  for (int q = 0; q < a.nranks; ++q) {
    RingBlock& b = blocks[size_t(q)];
    b.owner = q;
    b.src = at(Buf::kSend, size_t(q) * blockBytes);
    if (q == a.rank) b.dst = at(Buf::kRecv, 0);
    b.elems = a.count;
  }
  emitLogReduceScatter(plan, team, blocks, linkPhaseBytes(a.topo, a.chunkBytes), true);
}

}  // namespace strata
