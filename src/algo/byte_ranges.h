// Byte ranges of a plan's buffers: what a flow's reference covers, and a set
// of ranges merged as they are added. For the marks seal() computes from
// what later phases do with a flow's bytes (plan_lending.cc, plan_final_writes.cc).
#pragma once

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <map>

#include "algo/plan.h"

namespace strata {

struct ByteRange {
  size_t begin = 0, end = 0;
};

// The bytes a reference of flow f covers, from its first run to its last
// (strided flows count as their whole span).
inline ByteRange spanOf(Ref r, const Flow& f, size_t stride) {
  size_t last = f.runs > 1 ? size_t(f.runs - 1) * stride : 0;
  return {r.offset, r.offset + last + runBytes(f)};
}

// Disjoint ranges (merged as they come).
class ByteRanges {
 public:
  void add(ByteRange r) {
    if (r.begin >= r.end) return;
    auto it = ranges_.upper_bound(r.begin);
    if (it != ranges_.begin() && std::prev(it)->second >= r.begin) --it;
    while (it != ranges_.end() && it->first <= r.end) {
      r.begin = std::min(r.begin, it->first);
      r.end = std::max(r.end, it->second);
      it = ranges_.erase(it);
    }
    ranges_[r.begin] = r.end;
  }
  bool overlaps(ByteRange r) const {
    if (r.begin >= r.end) return false;
    auto it = ranges_.upper_bound(r.begin);
    if (it != ranges_.begin() && std::prev(it)->second > r.begin) return true;
    return it != ranges_.end() && it->first < r.end;
  }

 private:
  std::map<size_t, size_t> ranges_;  // begin -> end
};

}  // namespace strata
