#include "support/collective_check.h"

#include <cstring>

#include "core/error.h"
#include "support/reference.h"

namespace strata::test {

bool sendsBlocks(Coll c) { return c == Coll::kReduceScatter || c == Coll::kAllToAll; }
bool recvsBlocks(Coll c) { return c == Coll::kAllGather || c == Coll::kAllToAll; }

CallArgs layOutCall(Coll coll, size_t count, size_t elem, int rank, int nranks, bool inPlace, const uint8_t* send,
                    uint8_t* recv) {
  if (!inPlace) return {send, recv};
  const size_t block = count * elem, mine = size_t(rank) * block;
  if (coll == Coll::kAllGather) {
    std::memcpy(recv + mine, send, block);
    return {recv + mine, recv};
  }
  std::memcpy(recv, send, sendsBlocks(coll) ? block * size_t(nranks) : block);
  if (coll == Coll::kReduceScatter) return {recv, recv + mine};
  return {recv, recv};
}

std::string checkOutput(Coll coll, strataDataType_t dtype, strataRedOp_t op, int n, int rank,
                        int root, size_t count, const std::vector<const void*>& inputs,
                        const void* outPtr) {
  const size_t e = elemSize(dtype);
  const auto* o = static_cast<const uint8_t*>(outPtr);
  auto block = [&](int r, size_t b) {
    return static_cast<const uint8_t*>(inputs[size_t(r)]) + b * count * e;
  };
  std::string first;
  size_t bad = 0;
  switch (coll) {
    case Coll::kAllReduce: bad = checkReduced(dtype, op, o, inputs, 0, count, &first); break;
    case Coll::kReduce:
      if (rank == root) bad = checkReduced(dtype, op, o, inputs, 0, count, &first);
      break;
    case Coll::kReduceScatter:
      bad = checkReduced(dtype, op, o, inputs, size_t(rank) * count, count, &first);
      break;
    case Coll::kAllGather:
      for (int p = 0; p < n && !bad; ++p)
        if (std::memcmp(o + size_t(p) * count * e, block(p, 0), count * e))
          ++bad, first = format("block %d differs from rank %d's input", p, p);
      break;
    case Coll::kBroadcast:
      if (std::memcmp(o, block(root, 0), count * e)) ++bad, first = "payload differs from the root's";
      break;
    case Coll::kAllToAll:
      for (int p = 0; p < n && !bad; ++p)
        if (std::memcmp(o + size_t(p) * count * e, block(p, size_t(rank)), count * e))
          ++bad, first = format("block from rank %d differs", p);
      break;
    default: break;
  }
  return bad ? format("%zu wrong: %s", bad, first.c_str()) : "";
}

}  // namespace strata::test
