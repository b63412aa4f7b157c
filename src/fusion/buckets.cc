#include "fusion/buckets.h"

#include <algorithm>

#include "core/dtype.h"

namespace strata {

bool fusible(Coll c) {
  return c == Coll::kAllReduce || c == Coll::kReduceScatter || c == Coll::kAllGather ||
         c == Coll::kBroadcast || c == Coll::kReduce || c == Coll::kAllToAll;
}

size_t fusedBytes(const Request& r, int nranks) {
  bool blocks = r.coll == Coll::kReduceScatter || r.coll == Coll::kAllGather || r.coll == Coll::kAllToAll;
  return r.count * dtypeSize(r.dtype) * (blocks ? size_t(nranks) : 1);
}

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
  for (size_t i = 0; i < reqs.size(); ++i) {
    const Request& r = *reqs[i];
    if (r.count == 0 && r.coll != Coll::kBarrier) continue;
    size_t bytes = fusedBytes(r, nranks);
    if (!fusible(r.coll) || threshold == 0 || bytes >= threshold) {
      out.push_back(Bucket{{i}, false});
      continue;
    }
    auto it = std::find_if(open.begin(), open.end(), [&](const OpenBucket& b) { return sameKind(b, r); });
    if (it != open.end() && it->bytes + bytes > threshold) {
      out[it->index].full = true;
      open.erase(it);
      it = open.end();
    }
    if (it == open.end()) {
      open.push_back(OpenBucket{r.coll, r.dtype, r.redop, r.root, 0, out.size()});
      out.push_back(Bucket{});
      it = open.end() - 1;
    }
    out[it->index].members.push_back(i);
    it->bytes += bytes;
  }
  return out;
}

}  // namespace strata
