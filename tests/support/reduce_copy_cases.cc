#include "support/reduce_copy_cases.h"

#include <cstring>

#include "core/dtype.h"
#include "support/reference.h"

namespace strata::test {

namespace {
const char* layoutName(Layout l) {
  return l == Layout::kAligned ? "aligned" : l == Layout::kSameOffset ? "same-offset" : "mixed-offsets";
}
}  // namespace

std::string ReduceCopyCase::name() const {
  return std::string(dtypeName(dtype)) + " " + redOpName(op) + " nsrc " + std::to_string(nsrc) + " ndst " +
         std::to_string(ndst) + " count " + std::to_string(count) + " " + layoutName(layout) +
         (inPlace ? " in-place" : "");
}

std::vector<ReduceCopyCase> reduceCopyCases(strataDataType_t dtype, strataRedOp_t op, bool large) {
  std::vector<uint64_t> counts = {0, 1, 2, 3, 7, 13, 31, 1009, 4099};
  if (large) counts.push_back((uint64_t(1) << 20) + 3);
  std::vector<ReduceCopyCase> cases;
  for (int nsrc : {1, 2, 3, 8})
    for (int ndst : {1, 2})
      for (uint64_t count : counts)
        for (Layout layout : {Layout::kAligned, Layout::kSameOffset, Layout::kMixedOffsets}) {
          if (layout == Layout::kMixedOffsets && nsrc == 1 && ndst == 1) continue;  // nothing to mix
          cases.push_back({dtype, op, nsrc, ndst, count, layout, false});
          if (layout == Layout::kAligned) cases.push_back({dtype, op, nsrc, ndst, count, layout, true});
        }
  return cases;
}

size_t ReduceCopyBuffers::offsetOf(int buffer) const {
  const size_t e = elemSize(case_.dtype);
  switch (case_.layout) {
    case Layout::kAligned: return kGuard;
    case Layout::kSameOffset: return kGuard + e;
    case Layout::kMixedOffsets: return kGuard + e * size_t(buffer % 3);
  }
  return kGuard;
}

ReduceCopyBuffers::ReduceCopyBuffers(const ReduceCopyCase& c, uint64_t seed) : case_(c) {
  const size_t e = elemSize(c.dtype);
  bytes_ = 2 * kGuard + 2 * e + c.count * e;
  const int n = c.nsrc + (c.inPlace ? c.ndst - 1 : c.ndst);
  storage_.assign(n, std::vector<uint8_t>(bytes_ + 64, kPoison));
  for (int i = 0; i < n; ++i) align_.push_back((64 - reinterpret_cast<uintptr_t>(storage_[i].data()) % 64) % 64);
  for (int s = 0; s < c.nsrc; ++s) {
    uint8_t* at = storage(s) + offsetOf(s);
    fillRandom(c.dtype, c.op, at, c.count, seed * 131 + uint64_t(s));
    original_.emplace_back(at, at + c.count * e);
  }
}

cuda::ReduceCopyArgs ReduceCopyBuffers::args(const std::function<uint8_t*(int)>& base) const {
  cuda::ReduceCopyArgs a;
  a.nsrc = case_.nsrc;
  a.ndst = case_.ndst;
  a.count = case_.count;
  a.divisor = case_.op == strataAvg ? uint64_t(case_.nsrc) : 1;
  for (int s = 0; s < case_.nsrc; ++s) a.src[s] = base(s) + offsetOf(s);
  int next = case_.nsrc;
  for (int d = 0; d < case_.ndst; ++d) {
    const int buffer = (case_.inPlace && d == 0) ? 0 : next++;
    a.dst[d] = base(buffer) + offsetOf(buffer);
  }
  return a;
}

const uint8_t* ReduceCopyBuffers::destination(int d) {
  return static_cast<const uint8_t*>(hostArgs().dst[d]);
}

std::string ReduceCopyBuffers::check() {
  const size_t e = elemSize(case_.dtype);
  for (int i = 0; i < buffers(); ++i) {
    const size_t first = offsetOf(i), end = first + case_.count * e;
    for (size_t b = 0; b < bytes_; ++b)
      if ((b < first || b >= end) && storage(i)[b] != kPoison)
        return case_.name() + ": buffer " + std::to_string(i) + " changed outside its elements at byte " +
               std::to_string(b) + " (element region " + std::to_string(first) + "-" + std::to_string(end) + ")";
  }
  if (case_.count == 0) return "";  // nothing else to compare (and no memcmp of null pointers)
  std::vector<const void*> inputs;
  for (auto& o : original_) inputs.push_back(o.data());
  const cuda::ReduceCopyArgs a = hostArgs();
  for (int d = 0; d < case_.ndst; ++d) {
    std::string first;
    const size_t bad = checkReduced(case_.dtype, case_.op, a.dst[d], inputs, 0, case_.count, &first);
    if (bad) return case_.name() + ": destination " + std::to_string(d) + ": " + std::to_string(bad) +
                    " wrong elements, " + first;
    if (d > 0 && std::memcmp(a.dst[d], a.dst[0], case_.count * e) != 0)
      return case_.name() + ": destination " + std::to_string(d) + " differs from destination 0";
  }
  for (int s = (case_.inPlace ? 1 : 0); s < case_.nsrc; ++s)
    if (std::memcmp(a.src[s], original_[s].data(), case_.count * e) != 0)
      return case_.name() + ": source " + std::to_string(s) + " was written";
  return "";
}

}  // namespace strata::test
