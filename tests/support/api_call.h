// Calls the public C API for a collective given as a Coll (test convenience).
#pragma once

#include "algo/plan.h"
#include "strata/strata.h"

namespace strata::test {

inline strataResult_t callCollective(Coll coll, const void* send, void* recv, size_t count,
                                     strataDataType_t t, strataRedOp_t op, int root,
                                     strataComm_t comm, strataStream_t stream = nullptr) {
  switch (coll) {
    case Coll::kAllReduce: return strataAllReduce(send, recv, count, t, op, comm, stream);
    case Coll::kReduceScatter: return strataReduceScatter(send, recv, count, t, op, comm, stream);
    case Coll::kAllGather: return strataAllGather(send, recv, count, t, comm, stream);
    case Coll::kBroadcast: return strataBroadcast(send, recv, count, t, root, comm, stream);
    case Coll::kReduce: return strataReduce(send, recv, count, t, op, root, comm, stream);
    case Coll::kAllToAll: return strataAllToAll(send, recv, count, t, comm, stream);
    default: return strataInvalidArgument;
  }
}

}  // namespace strata::test
