// The last call validate() (exec/request.cc) passed on a communicator.
// Training loops issue the same collective on the same buffers step after
// step; a call equal to the memo in every argument needs none of the checks
// again (they depend on nothing else while no device memory can exist), and
// the call skips them: the repeated-call fast path's first part.
#pragma once

#include <cstddef>

#include "algo/plan.h"
#include "strata/strata.h"

namespace strata {

struct CallMemo {
  bool valid = false;
  Coll coll = Coll::kAllReduce;
  const void* send = nullptr;
  const void* recv = nullptr;
  size_t count = 0;
  strataDataType_t dtype = strataFloat32;
  strataRedOp_t redop = strataSum;
  int root = 0;
  bool inPlace = false;  // what the checks found
  // The compiled tiny plan (exec/tiny_run.h) this call last ran, while the
  // plan cache has let no plan go since (`planEvictions`, PlanCache::evictions):
  // a repeat runs it without its checks, its descriptor or the plan lookup
  // (runRepeatedCall, exec/request.h), the fast path's second part.
  Plan* tinyPlan = nullptr;
  uint64_t planEvictions = 0;
};

}  // namespace strata
