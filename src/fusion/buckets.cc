#include "fusion/buckets.h"

#include <algorithm>

#include "core/dtype.h"

namespace strata {

namespace {

struct OpenBucket {
  Coll coll;
  strataDataType_t dtype;
  strataRedOp_t redop;
  int root;
  size_t bytes = 0;
  size_t index;  // into the result
};

bool sameKind(const OpenBucket& b, const Request& r) {
  bool hasOp = r.coll == Coll::kAllReduce || r.coll == Coll::kReduceScatter || r.coll == Coll::kReduce;
  bool hasRoot = r.coll == Coll::kBroadcast || r.coll == Coll::kReduce;
  return b.coll == r.coll && b.dtype == r.dtype && (!hasOp || b.redop == r.redop) &&
         (!hasRoot || b.root == r.root);
}

}  // namespace

std::vector<Bucket> planBuckets(const std::vector<Request>& reqs, size_t threshold, int nranks) {
  std::vector<const Request*> ptrs;
  ptrs.reserve(reqs.size());
  for (const Request& r : reqs) ptrs.push_back(&r);
  return planBuckets(ptrs, threshold, nranks);
}

std::vector<Bucket> planBuckets(const std::vector<const Request*>& reqs, size_t threshold, int nranks) {
  std::vector<Bucket> out;
  std::vector<OpenBucket> open;
  // The open bucket the previous request went to: a training step's tensors
  // are mostly of one kind, so it is tried before a search of them all.
  size_t last = 0;
  for (size_t i = 0; i < reqs.size(); ++i) {
    const Request& r = *reqs[i];
    if (r.count == 0 && r.coll != Coll::kBarrier) continue;
    const size_t bytes = fusedBytes(r, nranks);
    if (!fusible(r.coll) || threshold == 0 || bytes >= threshold) {
      out.push_back(Bucket{{i}, false});
      continue;
    }
    if (last >= open.size() || !sameKind(open[last], r)) {
      auto it = std::find_if(open.begin(), open.end(), [&](const OpenBucket& b) { return sameKind(b, r); });
      last = size_t(it - open.begin());
    }
    if (last < open.size() && open[last].bytes + bytes > threshold) {
      out[open[last].index].full = true;
      open.erase(open.begin() + std::ptrdiff_t(last));
      last = open.size();
    }
    if (last == open.size()) {
      open.push_back(OpenBucket{r.coll, r.dtype, r.redop, r.root, 0, out.size()});
      out.push_back(Bucket{});
    }
    out[open[last].index].members.push_back(i);
    open[last].bytes += bytes;
  }
  return out;
}

}  // namespace strata
