// The cuda_ipc step (src/device/ipc_plan.h), run on the CPU: every rank's
// staging slot is an area of this process, each rank's reductions run the
// reduce-and-copy kernel's own body (kernels/cuda/reduce_copy_body.h) and its
// copies are memcpy. For every collective, world sizes 1, 2, 3, 5 and 8, odd
// counts and pieces, in place and out of place, each rank's whole output must
// match the float64 reference, and no region one rank writes in a step may be
// read or written by another rank in that step (the ranks run concurrently
// between the two barriers on a GPU).
#include <gtest/gtest.h>

#include <cstring>

#include "core/dtype.h"
#include "core/error.h"
#include "device/ipc_plan.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/host_bodies.h"
#include "support/reduce_copy_cases.h"
#include "support/staged_calls.h"

namespace strata {
namespace {

struct Access {
  int rank;
  int area;
  size_t begin, end;
  bool write;
};

std::vector<Access> accessesOf(const IpcWork& w, int rank, size_t elementBytes) {
  std::vector<Access> all;
  for (const IpcReduce& r : w.reduces) {
    const size_t bytes = r.count * elementBytes;
    for (const IpcRegion& s : r.srcs) all.push_back({rank, s.area, s.offset, s.offset + bytes, false});
    for (const IpcRegion& d : r.dsts) all.push_back({rank, d.area, d.offset, d.offset + bytes, true});
  }
  for (const IpcCopy& c : w.copies) {
    all.push_back({rank, c.src.area, c.src.offset, c.src.offset + c.bytes, false});
    all.push_back({rank, c.dst.area, c.dst.offset, c.dst.offset + c.bytes, true});
  }
  return all;
}

// "" or the first pair of ranks whose accesses collide, or an access outside
// its area.
std::string conflictIn(const std::vector<Access>& all, const std::vector<std::vector<uint8_t>>& areas) {
  for (const Access& a : all)
    if (a.area < 0 || a.area >= int(areas.size()) || a.end > areas[size_t(a.area)].size())
      return ::testing::PrintToString(a.rank) + " reaches outside area " + std::to_string(a.area);
  for (const Access& a : all)
    for (const Access& b : all)
      if (a.rank != b.rank && a.write && a.area == b.area && a.begin < b.end && b.begin < a.end &&
          a.end > a.begin && b.end > b.begin)
        return "rank " + std::to_string(a.rank) + " writes [" + std::to_string(a.begin) + ", " +
               std::to_string(a.end) + ") of area " + std::to_string(a.area) + " while rank " +
               std::to_string(b.rank) + (b.write ? " writes" : " reads") + " [" + std::to_string(b.begin) + ", " +
               std::to_string(b.end) + ")";
  return "";
}

void runWork(const IpcWork& w, strataDataType_t dtype, strataRedOp_t op, std::vector<std::vector<uint8_t>>& areas) {
  auto at = [&](const IpcRegion& r) { return areas[size_t(r.area)].data() + r.offset; };
  for (const IpcReduce& r : w.reduces) {
    ASSERT_LE(r.srcs.size(), size_t(cuda::kMaxSources));
    ASSERT_LE(r.dsts.size(), size_t(cuda::kMaxDestinations));
    cuda::ReduceCopyArgs a;
    for (const IpcRegion& s : r.srcs) a.src[a.nsrc++] = at(s);
    for (const IpcRegion& d : r.dsts) a.dst[a.ndst++] = at(d);
    a.count = r.count;
    a.divisor = w.divisor;
    cuda::reduceCopyOnHost(dtype, op, a, 96);
  }
  for (const IpcCopy& c : w.copies) std::memmove(at(c.dst), at(c.src), c.bytes);
}

class IpcStep : public ::testing::TestWithParam<test::StagedCallCase> {};

TEST_P(IpcStep, EveryRanksWorkBetweenTheBarriersGivesTheWholeResult) {
  const test::StagedCallCase c = GetParam();
  test::checkStagedCalls(c, {1, 2, 3, 5, 8}, [&](test::StagedStep& step) {
    const int n = int(step.pieces.size());
    const size_t elements = step.pieces[0].host.count;
    std::vector<IpcWork> work;
    std::vector<Access> accesses;
    for (int r = 0; r < n; ++r) {
      work.push_back(planIpcStep(c.coll, c.dtype, c.op, step.root, elements, n, r));
      for (const Access& a : accessesOf(work.back(), r, dtypeSize(c.dtype))) accesses.push_back(a);
    }
    ASSERT_EQ(conflictIn(accesses, step.areas), "");
    // Later ranks first: a plan that relied on an order between ranks fails.
    for (int r = n - 1; r >= 0; --r) {
      runWork(work[size_t(r)], c.dtype, c.op, step.areas);
      if (::testing::Test::HasFatalFailure()) return;
    }
    if (c.coll == Coll::kAllReduce)  // one rank computes each element; all get its bits
      for (int r = 1; r < n; ++r)
        ASSERT_EQ(std::memcmp(step.areas[size_t(r)].data(), step.areas[0].data(), elements * dtypeSize(c.dtype)), 0)
            << "rank " << r << "'s result differs from rank 0's";
  });
}

INSTANTIATE_TEST_SUITE_P(
    EveryCollective, IpcStep,
    ::testing::Values(test::StagedCallCase{Coll::kAllReduce, strataFloat32, strataSum},
                      test::StagedCallCase{Coll::kAllReduce, strataFloat32, strataAvg},
                      test::StagedCallCase{Coll::kAllReduce, strataBfloat16, strataSum},
                      test::StagedCallCase{Coll::kAllReduce, strataInt32, strataMax},
                      test::StagedCallCase{Coll::kReduceScatter, strataFloat64, strataSum},
                      test::StagedCallCase{Coll::kReduceScatter, strataBfloat16, strataAvg},
                      test::StagedCallCase{Coll::kAllGather, strataFloat16, strataSum},
                      test::StagedCallCase{Coll::kBroadcast, strataInt8, strataSum},
                      test::StagedCallCase{Coll::kReduce, strataFloat32, strataProd},
                      test::StagedCallCase{Coll::kReduce, strataFloat16, strataAvg},
                      test::StagedCallCase{Coll::kAllToAll, strataUint64, strataSum}),
    [](const auto& info) {
      return std::string(collName(info.param.coll)) + "_" + dtypeName(info.param.dtype) + "_" +
             redOpName(info.param.op);
    });

TEST(IpcStep, SendAndReceiveAreNotIpcStepsAndLargeWorldsAreRefused) {
  EXPECT_FALSE(ipcCarries(Coll::kSend));
  EXPECT_FALSE(ipcCarries(Coll::kRecv));
  EXPECT_THROW(planIpcStep(Coll::kSend, strataFloat32, strataSum, 0, 4, 2, 0), Error);
  EXPECT_THROW(planIpcStep(Coll::kAllReduce, strataFloat32, strataSum, 0, 4, kIpcMaxRanks + 1, 0), Error);
}

// Across nodes, each local rank's shard work (reduce, spread, copies) touches
// no region another local rank of its node writes, the shards tile the row,
// and Avg divides once, by the whole communicator's size.
TEST(IpcStep, ShardsOfAnAllReduceAcrossNodesAreDisjointAndTileTheRow) {
  for (int local : {1, 2, 3, 5, 8})
    for (size_t elements : {size_t(1), size_t(7), size_t(1023)}) {
      std::vector<std::vector<uint8_t>> areas(size_t(local), std::vector<uint8_t>(elements * 2));
      std::vector<Access> accesses;
      size_t covered = 0;
      for (int j = 0; j < local; ++j) {
        const IpcShardWork w = planIpcShardAllReduce(strataBfloat16, strataAvg, elements, local, j, 4 * local);
        EXPECT_EQ(w.divisor, uint64_t(4 * local));
        if (w.count == 0) continue;
        EXPECT_EQ(w.offset, covered * 2) << "local=" << local << " j=" << j;
        covered += w.count;
        IpcWork asWork;
        asWork.reduces = {w.reduce, w.spread};
        asWork.copies = w.copies;
        for (const Access& a : accessesOf(asWork, j, 2)) accesses.push_back(a);
        EXPECT_EQ(w.spread.dsts.size() + w.copies.size(), size_t(local)) << "every slot gets the shard once";
      }
      EXPECT_EQ(covered, elements) << "local=" << local;
      EXPECT_EQ(conflictIn(accesses, areas), "") << "local=" << local << " elements=" << elements;
    }
}

// An all-reduce's shards start on 64-byte boundaries and cover the row once.
TEST(IpcStep, AllReduceShardsTileTheRowOnSixtyFourByteBoundaries) {
  for (int n : {2, 3, 5, 8})
    for (size_t elements : {size_t(1), size_t(16), size_t(17), size_t(1000003)}) {
      size_t covered = 0;
      for (int r = 0; r < n; ++r) {
        const IpcWork w = planIpcStep(Coll::kAllReduce, strataFloat32, strataSum, 0, elements, n, r);
        for (const IpcReduce& red : w.reduces) {
          EXPECT_EQ(red.dsts[0].offset % 64, 0u) << "n=" << n << " rank " << r;
          EXPECT_EQ(red.dsts[0].offset, covered * 4) << "n=" << n << " rank " << r;
          covered += red.count;
        }
      }
      EXPECT_EQ(covered, elements) << "n=" << n;
    }
}

}  // namespace
}  // namespace strata
