// Which collectives of a group run fused together. Collectives with the same
// (collective, dtype, op, root) share a bucket until the next one would take
// it past the fusion threshold; a bucket runs as one collective. Everything
// here depends only on what every rank passes alike (collective, counts,
// types), never on addresses, so every rank forms the same buckets.
#pragma once

#include <cstddef>
#include <vector>

#include "core/dtype.h"
#include "exec/request.h"

namespace strata {

struct Bucket {
  std::vector<size_t> members;  // indices into the request list, in call order
  bool full = false;            // closed because the next member would not fit
};

// Whether a collective can be fused with others of its kind.
inline bool fusible(Coll c) {
  return c == Coll::kAllReduce || c == Coll::kReduceScatter || c == Coll::kAllGather ||
         c == Coll::kBroadcast || c == Coll::kReduce || c == Coll::kAllToAll;
}

// Bytes a request puts in a fused buffer (its larger side).
inline size_t fusedBytes(const Request& r, int nranks) {
  bool blocks = r.coll == Coll::kReduceScatter || r.coll == Coll::kAllGather || r.coll == Coll::kAllToAll;
  return r.count * dtypeSize(r.dtype) * (blocks ? size_t(nranks) : 1);
}

// Buckets in the order they run: by the position of their first member.
// thresholdBytes 0 gives every request a bucket of its own; a request of at
// least thresholdBytes runs alone; requests of count 0 are left out.
std::vector<Bucket> planBuckets(const std::vector<const Request*>& reqs, size_t thresholdBytes, int nranks);
std::vector<Bucket> planBuckets(const std::vector<Request>& reqs, size_t thresholdBytes, int nranks);

}  // namespace strata
