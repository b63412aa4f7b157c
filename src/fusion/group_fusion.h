// Runs the collectives of a strataGroupStart/End block fused (buckets.h),
// one collective per bucket.
#pragma once

#include <vector>

#include "exec/request.h"

namespace strata {

// `collectives`: validated requests of one communicator, in call order.
void runGroupCollectives(Comm& comm, std::vector<Request>& collectives);

}  // namespace strata
