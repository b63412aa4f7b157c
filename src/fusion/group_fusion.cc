#include "fusion/group_fusion.h"

#include "core/dtype.h"
#include "core/log.h"
#include "fusion/buckets.h"
#include "fusion/fused_op.h"

namespace strata {

void runGroupCollectives(Comm& comm, std::vector<Request>& reqs) {
  std::vector<Bucket> buckets = planBuckets(reqs, comm.config().fusionThresholdBytes, comm.nranks());
  std::vector<const Request*> members;
  for (const Bucket& b : buckets) {
    if (b.members.size() == 1) {
      runCollective(reqs[b.members[0]]);
      continue;
    }
    members.clear();
    size_t bytes = 0;
    for (size_t i : b.members) {
      members.push_back(&reqs[i]);
      bytes += fusedBytes(reqs[i], comm.nranks());
    }
    const Request& r = *members[0];
    STRATA_INFO("fusion: rank %d flushes %zu %s %s tensors, %zu bytes, as one collective (reason: %s)",
                comm.rank(), members.size(), collName(r.coll), dtypeName(r.dtype), bytes,
                b.full ? "full" : "group end");
    runFused(members);
  }
}

}  // namespace strata
