#include "support/collective_cases.h"

#include <cstring>

#include "core/dtype.h"
#include "core/error.h"
#include "support/api_call.h"
#include "support/collective_check.h"
#include "support/reference.h"

namespace strata::test {

namespace {
bool reduces(Coll c) { return c == Coll::kAllReduce || c == Coll::kReduceScatter || c == Coll::kReduce; }

}  // namespace

std::vector<Case> allCases() {
  std::vector<Case> cases;
  const Coll colls[] = {Coll::kAllReduce, Coll::kReduceScatter, Coll::kAllGather,
                        Coll::kBroadcast, Coll::kReduce,        Coll::kAllToAll};
  size_t k = 0;
  for (Coll c : colls)
    for (int t = 0; t < strataNumTypes; ++t)
      for (int op = 0; op < (reduces(c) ? int(strataNumOps) : 1); ++op)
        for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(1023)})
          for (bool inPlace : {false, true}) cases.push_back({c, strataDataType_t(t), strataRedOp_t(op), count, inPlace, (k++ % 4)});
  // Large, odd-sized messages: pipelined, sliced paths.
  const size_t big = 1048579;    // prime, not a multiple of any vector width
  const size_t bigBlock = 131071;  // prime block count for the per-rank-block collectives
  cases.push_back({Coll::kAllReduce, strataFloat32, strataSum, big, false, 1});
  cases.push_back({Coll::kAllReduce, strataBfloat16, strataAvg, big, true, 0});
  cases.push_back({Coll::kAllReduce, strataInt64, strataMax, big, false, 3});
  cases.push_back({Coll::kReduceScatter, strataFloat16, strataSum, big, false, 2});
  cases.push_back({Coll::kReduceScatter, strataFloat32, strataMin, bigBlock, true, 0});
  cases.push_back({Coll::kReduceScatter, strataFloat32, strataAvg, bigBlock, false, 3});
  cases.push_back({Coll::kAllGather, strataUint8, strataSum, big, false, 1});
  cases.push_back({Coll::kAllGather, strataFloat32, strataSum, bigBlock, true, 0});
  cases.push_back({Coll::kBroadcast, strataInt8, strataSum, big, false, 3});
  cases.push_back({Coll::kBroadcast, strataFloat64, strataSum, big, true, 0});
  cases.push_back({Coll::kReduce, strataFloat64, strataProd, big, false, 2});
  cases.push_back({Coll::kReduce, strataInt32, strataSum, big, true, 0});
  cases.push_back({Coll::kAllToAll, strataInt8, strataSum, big, false, 1});
  cases.push_back({Coll::kAllToAll, strataFloat32, strataSum, bigBlock, true, 0});
  return cases;
}

// Runs one case on this rank; returns "" or the problem.
std::string runCase(const Case& c, size_t index, int rank, int n, strataComm_t comm, const CaseCaller& caller) {
  const size_t e = elemSize(c.dtype);
  const int root = int(index % size_t(n));
  const size_t sendElems = sendsBlocks(c.coll) ? c.count * size_t(n) : c.count;
  const size_t recvElems = recvsBlocks(c.coll) ? c.count * size_t(n) : c.count;
  std::vector<std::vector<uint8_t>> inputs(static_cast<size_t>(n));
  std::vector<const void*> ptrs;
  for (int r = 0; r < n; ++r) {
    inputs[size_t(r)].resize(sendElems * e + 1);
    fillRandom(c.dtype, c.op, inputs[size_t(r)].data(), sendElems, index * 131 + size_t(r));
    ptrs.push_back(inputs[size_t(r)].data());
  }
  std::vector<uint8_t> sendMem(sendElems * e + 8), recvMem(std::max(sendElems, recvElems) * e + 8, 0xCD);
  uint8_t* send = sendMem.data() + c.misalign;
  uint8_t* recv = recvMem.data() + c.misalign;
  std::memcpy(send, ptrs[size_t(rank)], sendElems * e);
  const CallArgs args = layOutCall(c.coll, c.count, e, rank, n, c.inPlace, send, recv);
  const void* sendArg = args.send;
  void* recvArg = args.recv;
  strataResult_t rc = caller ? caller(c, root, sendMem, recvMem, sendArg, recvArg, comm)
                             : callCollective(c.coll, sendArg, recvArg, c.count, c.dtype, c.op, root, comm);
  if (rc != strataSuccess) return format("returned %s: %s", strataGetErrorString(rc), strataGetLastError(comm));
  if (c.count == 0) return "";
  return checkOutput(c.coll, c.dtype, c.op, n, rank, root, c.count, ptrs, recvArg);
}


std::string describeCase(const Case& c) {
  return format("%s %s %s count=%zu %s misalign=%zu", collName(c.coll), dtypeName(c.dtype),
                redOpName(c.op), c.count, c.inPlace ? "in-place" : "out-of-place", c.misalign);
}

}  // namespace strata::test
