#include "fusion/negotiate.h"

#include <algorithm>
#include <unordered_map>

#include "core/dtype.h"
#include "core/error.h"
#include "exec/request.h"
#include "fusion/word_hash.h"

namespace strata {

namespace {

uint64_t describeBits(const PendingKey& k) { return uint64_t(k.dtype) | uint64_t(k.redop) << 8 | 1ull << 16; }

std::string describeKey(uint64_t bits, uint64_t count) {
  return format("%llu x %s %s", (unsigned long long)count, dtypeName(strataDataType_t(bits & 0xff)),
                redOpName(strataRedOp_t((bits >> 8) & 0xff)));
}

}  // namespace

Agreement negotiate(Comm& comm, const std::vector<PendingKey>& mine) {
  const size_t n = size_t(comm.nranks());
  // Three chains (keys, counts, types) run side by side: one chain of
  // every word waited on each multiply, ~3 us over a thousand keys.
  WordHash keys, counts, types, digest;
  for (const PendingKey& k : mine) {
    keys.mix(k.key);
    counts.mix(k.count);
    types.mix(describeBits(k));
  }
  for (uint64_t v : {keys.h, counts.h, types.h}) digest.mix(v);
  uint64_t header[2] = {mine.size(), digest.h};
  std::vector<uint64_t> headers(2 * n);
  hostAllGather(comm, header, headers.data(), 2);
  Agreement out;
  bool same = true;
  size_t most = 0;
  for (size_t r = 0; r < n; ++r) {
    same = same && headers[2 * r] == header[0] && headers[2 * r + 1] == header[1];
    most = std::max<size_t>(most, headers[2 * r]);
  }
  if (same) {
    for (size_t i = 0; i < mine.size(); ++i) out.ready.push_back(i);
    return out;
  }
  // The lists differ: exchange them (padded to the longest) and match by key.
  std::vector<uint64_t> records(3 * most, 0), all(3 * most * n);
  for (size_t i = 0; i < mine.size(); ++i) {
    records[3 * i] = mine[i].key;
    records[3 * i + 1] = mine[i].count;
    records[3 * i + 2] = describeBits(mine[i]);
  }
  if (most) hostAllGather(comm, records.data(), all.data(), 3 * most);
  std::vector<std::unordered_map<uint64_t, size_t>> byKey(n);  // key -> record index per rank
  for (size_t r = 0; r < n; ++r)
    for (size_t i = 0; i < headers[2 * r]; ++i) byKey[r][all[3 * (r * most + i)]] = r * most + i;
  std::unordered_map<uint64_t, size_t> myIndex;
  for (size_t i = 0; i < mine.size(); ++i) myIndex[mine[i].key] = i;
  for (size_t i = 0; i < headers[0]; ++i) {  // rank 0's order
    const uint64_t key = all[3 * i];
    bool everywhere = true;
    for (size_t r = 1; r < n && everywhere; ++r) everywhere = byKey[r].count(key) > 0;
    if (!everywhere) continue;
    std::string why;
    for (size_t r = 1; r < n && why.empty(); ++r) {
      size_t a = 3 * i, b = 3 * byKey[r][key];
      if (all[a + 1] != all[b + 1] || all[a + 2] != all[b + 2])
        why = format("fusion key %llu: rank 0 added %s but rank %zu added %s", (unsigned long long)key,
                     describeKey(all[a + 2], all[a + 1]).c_str(), r, describeKey(all[b + 2], all[b + 1]).c_str());
    }
    if (why.empty()) {
      out.ready.push_back(myIndex.at(key));
    } else {
      out.mismatched.emplace_back(myIndex.at(key), why);
    }
  }
  return out;
}

}  // namespace strata
