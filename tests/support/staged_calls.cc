#include "support/staged_calls.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "core/dtype.h"
#include "support/collective_check.h"
#include "support/reference.h"

namespace strata::test {

namespace {

// One rank's buffers for a call, laid out as the multi-process cases lay them out.
struct RankBuffers {
  std::vector<uint8_t> input, sendMem, recvMem;
  Request request;
};

RankBuffers makeRank(const StagedCallCase& c, size_t count, bool inPlace, int root, int rank, int n, uint64_t seed) {
  const size_t e = dtypeSize(c.dtype);
  const size_t sendElems = sendsBlocks(c.coll) ? count * size_t(n) : count;
  const size_t recvElems = recvsBlocks(c.coll) ? count * size_t(n) : count;
  RankBuffers b;
  b.input.resize(sendElems * e);
  fillRandom(c.dtype, c.op, b.input.data(), sendElems, seed);
  b.sendMem = b.input;
  b.recvMem.assign(std::max(sendElems, recvElems) * e, 0xCD);
  Request& r = b.request;
  r.coll = c.coll;
  r.dtype = c.dtype;
  r.redop = c.op;
  r.count = count;
  r.root = root;
  r.inPlace = inPlace;
  const CallArgs args = layOutCall(c.coll, count, e, rank, n, inPlace, b.sendMem.data(), b.recvMem.data());
  r.send = args.send;
  r.recv = args.recv;
  return b;
}

}  // namespace

void copyRows(const RowCopy& c) {
  for (size_t row = 0; row < c.rows; ++row)
    std::memcpy(static_cast<uint8_t*>(c.dst) + row * c.dstPitch,
                static_cast<const uint8_t*>(c.src) + row * c.srcPitch, c.rowBytes);
}

void checkStagedCalls(const StagedCallCase& c, const std::vector<int>& worlds, const StepRunner& run) {
  uint64_t seed = 7;
  for (int n : worlds)
    for (size_t count : {size_t(1), size_t(7), size_t(1023)})
      for (size_t chunk : {size_t(1), size_t(5), size_t(64), count})
        for (bool inPlace : {false, true}) {
          const int root = n - 1;
          SCOPED_TRACE(::testing::Message() << "n=" << n << " count=" << count << " chunk=" << chunk
                                            << (inPlace ? " in place" : " out of place"));
          std::vector<RankBuffers> ranks;
          for (int r = 0; r < n; ++r) ranks.push_back(makeRank(c, count, inPlace, root, r, n, ++seed));
          for (size_t offset = 0; offset < count; offset += chunk) {
            const size_t elements = std::min(chunk, count - offset);
            StagedStep step;
            step.root = root;
            step.areas.resize(size_t(n));
            for (int r = 0; r < n; ++r) {
              const WorldPlace at{n, r};
              step.areas[size_t(r)].assign(stagingBytes(ranks[size_t(r)].request, at, elements), 0xEE);
              step.pieces.push_back(
                  stagePiece(ranks[size_t(r)].request, at, offset, elements, step.areas[size_t(r)].data()));
              ASSERT_EQ(step.pieces.back().host.count, elements);
              copyRows(step.pieces.back().copyIn);
            }
            run(step);
            if (::testing::Test::HasFatalFailure()) return;
            for (const StagedPiece& p : step.pieces) copyRows(p.copyOut);
          }
          std::vector<const void*> inputs;
          for (const RankBuffers& b : ranks) inputs.push_back(b.input.data());
          if (c.coll == Coll::kReduce && !inPlace)
            for (int r = 0; r < n - 1; ++r)  // ranks other than the root: recv is not theirs to write
              for (uint8_t byte : ranks[size_t(r)].recvMem) ASSERT_EQ(byte, 0xCD) << "rank " << r << " recv written";
          for (int r = 0; r < n; ++r)
            ASSERT_EQ(checkOutput(c.coll, c.dtype, c.op, n, r, root, count, inputs, ranks[size_t(r)].request.recv), "")
                << "rank " << r;
        }
}

}  // namespace strata::test
