// Fusion's parts in one process: how grouped collectives form buckets, the
// pieces a fused buffer is made of, the multi-tensor copy kernel and the
// staging pool.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "fusion/buckets.h"
#include "fusion/key_set.h"
#include "fusion/staging_pool.h"
#include "kernels/cpu/multi_copy.h"
#include "core/error.h"
#include "exec/segments.h"

namespace strata {
namespace {

Request req(Coll coll, size_t count, strataDataType_t t = strataFloat32, strataRedOp_t op = strataSum,
            int root = 0) {
  Request r;
  r.coll = coll;
  r.count = count;
  r.dtype = t;
  r.redop = op;
  r.root = root;
  return r;
}

TEST(FusionBuckets, SameKindSharesABucketUntilTheThreshold) {
  // 10 float32 all-reduces of 100 elements (400 bytes) with a 1000-byte threshold: pairs.
  std::vector<Request> reqs(10, req(Coll::kAllReduce, 100));
  auto buckets = planBuckets(reqs, 1000, 2);
  ASSERT_EQ(buckets.size(), 5u);
  for (size_t b = 0; b < 5; ++b) {
    EXPECT_EQ(buckets[b].members, (std::vector<size_t>{2 * b, 2 * b + 1}));
    EXPECT_EQ(buckets[b].full, b < 4) << "only the last bucket closes at the group's end";
  }
}

TEST(FusionBuckets, MixedDtypesOpsAndRootsAreGroupedPerKindInCallOrder) {
  std::vector<Request> reqs = {req(Coll::kAllReduce, 5, strataFloat32),  req(Coll::kAllReduce, 5, strataFloat16),
                               req(Coll::kAllReduce, 5, strataFloat32),  req(Coll::kAllReduce, 5, strataFloat32, strataMax),
                               req(Coll::kBroadcast, 5, strataFloat32, strataSum, 1),
                               req(Coll::kBroadcast, 5, strataFloat32, strataSum, 0),
                               req(Coll::kAllReduce, 5, strataFloat16), req(Coll::kAllGather, 5),
                               req(Coll::kBarrier, 0), req(Coll::kBroadcast, 7, strataFloat32, strataMax, 1)};
  auto buckets = planBuckets(reqs, 1 << 20, 3);
  std::vector<std::vector<size_t>> want = {{0, 2}, {1, 6}, {3}, {4, 9}, {5}, {7}, {8}};
  ASSERT_EQ(buckets.size(), want.size());
  for (size_t b = 0; b < want.size(); ++b) EXPECT_EQ(buckets[b].members, want[b]) << "bucket " << b;
}

TEST(FusionBuckets, LargeZeroAndUnfusedRequests) {
  std::vector<Request> reqs = {req(Coll::kAllReduce, 10), req(Coll::kAllReduce, 0), req(Coll::kAllReduce, 300),
                               req(Coll::kAllReduce, 10)};
  auto buckets = planBuckets(reqs, 1000, 2);  // 300 x 4 bytes >= threshold: alone; count 0: left out
  ASSERT_EQ(buckets.size(), 2u);
  EXPECT_EQ(buckets[0].members, (std::vector<size_t>{0, 3}));
  EXPECT_EQ(buckets[1].members, (std::vector<size_t>{2}));
  auto unfused = planBuckets(reqs, 0, 2);
  EXPECT_EQ(unfused.size(), 3u);
  for (const Bucket& b : unfused) EXPECT_EQ(b.members.size(), 1u);
}

TEST(FusionBuckets, RankMajorCollectivesCountEveryBlockAgainstTheThreshold) {
  // reduce-scatter of 100 per block on 4 ranks: 1600 bytes each.
  std::vector<Request> reqs(3, req(Coll::kReduceScatter, 100));
  EXPECT_EQ(planBuckets(reqs, 3200, 4).size(), 2u);
  EXPECT_EQ(planBuckets(reqs, 4799, 4).size(), 2u);
  EXPECT_EQ(planBuckets(reqs, 4800, 4).size(), 1u) << "1600 x 3 = 4800 fits exactly";
  EXPECT_EQ(planBuckets(reqs, 4801, 4).size(), 1u);
}

TEST(Segments, LocateGivesThePieceAndTheContiguousRun) {
  std::vector<uint8_t> a(10), b(5), c(7);
  Segments s;
  s.append(a.data(), 10);
  s.append(b.data(), 0);  // skipped
  s.append(b.data(), 5);
  s.append(c.data(), 7);
  EXPECT_EQ(s.bytes(), 22u);
  EXPECT_EQ(s.pieces(), 3u);
  size_t run;
  EXPECT_EQ(s.locate(0, &run), a.data());
  EXPECT_EQ(run, 10u);
  EXPECT_EQ(s.locate(12, &run), b.data() + 2);
  EXPECT_EQ(run, 3u);
  EXPECT_EQ(s.locate(21, &run), c.data() + 6);
  EXPECT_EQ(run, 1u);
  EXPECT_THROW(s.locate(22, &run), Error);
}

TEST(Segments, AdjacentPiecesMerge) {
  std::vector<uint8_t> a(100);
  Segments s;
  s.append(a.data(), 40);
  s.append(a.data() + 40, 60);
  EXPECT_EQ(s.pieces(), 1u);
  size_t run;
  EXPECT_EQ(s.locate(5, &run), a.data() + 5);
  EXPECT_EQ(run, 95u);
}

TEST(MultiCopy, CopiesEveryItemExactlyAtOddSizesAndAlignments) {
  std::mt19937_64 rng(3);
  std::vector<uint8_t> src(1 << 20), dst(1 << 20, 0);
  for (auto& x : src) x = uint8_t(rng());
  std::vector<kernels::CopyItem> items;
  size_t at = 0;
  for (size_t len : {size_t(0), size_t(1), size_t(15), size_t(16), size_t(31), size_t(33), size_t(511),
                     size_t(512), size_t(513), size_t(4099), size_t(65537), size_t(300001)}) {
    items.push_back({dst.data() + at + 3, src.data() + at + 1, len});
    at += len + 64;
  }
  kernels::multiCopy(items.data(), items.size());
  for (const auto& it : items) {
    ASSERT_EQ(std::memcmp(it.dst, it.src, it.bytes), 0) << it.bytes << " bytes";
    // Bytes around each destination are untouched.
    EXPECT_EQ(static_cast<uint8_t*>(it.dst)[-1], 0);
    EXPECT_EQ(static_cast<uint8_t*>(it.dst)[it.bytes], 0);
  }
}

TEST(StagingPool, ReusesFreedBuffersInsteadOfAllocating) {
  StagingPool pool;
  uint8_t* first;
  {
    auto lease = pool.acquire(100000);
    first = lease.data();
    std::memset(first, 1, 100000);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
  }
  size_t held = pool.heldBytes();
  for (int i = 0; i < 10; ++i) {
    auto lease = pool.acquire(50000 + size_t(i));
    EXPECT_EQ(lease.data(), first);
  }
  EXPECT_EQ(pool.heldBytes(), held);
  {
    auto a = pool.acquire(1000), b = pool.acquire(1000);  // two at once: two buffers
    EXPECT_NE(a.data(), b.data());
  }
  auto big = pool.acquire(1 << 22);  // grows, replacing a free one that is too small
  EXPECT_LE(pool.heldBytes(), held + (size_t(1) << 22) + 4096);
}

}  // namespace
}  // namespace strata

namespace strata {
namespace {

// KeySet (the fusion context's keys in flight) against std::set, through
// random inserts and erases of clustered and spread keys, across growth.
TEST(KeySet, BehavesAsAStdSet) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 4; ++trial) {
    KeySet mine;
    std::set<uint64_t> ref;
    for (int op = 0; op < 20000; ++op) {
      const uint64_t key = trial % 2 ? rng() % 300 : rng() % 5000 * 0x10000;  // dense, or spread far apart
      if (rng() % 3 != 0) {
        ASSERT_EQ(mine.insert(key), ref.insert(key).second) << "insert " << key;
      } else {
        mine.erase(key);
        ref.erase(key);
      }
      ASSERT_EQ(mine.size(), ref.size());
      if (op % 97 == 0) {
        for (uint64_t k = 0; k < 300; ++k) ASSERT_EQ(mine.contains(k), ref.count(k) == 1) << k;
        for (uint64_t k : ref) ASSERT_TRUE(mine.contains(k)) << k;
      }
    }
    for (uint64_t k : std::vector<uint64_t>(ref.begin(), ref.end())) mine.erase(k);
    EXPECT_EQ(mine.size(), 0u);
    EXPECT_FALSE(mine.contains(0));
  }
}

}  // namespace
}  // namespace strata
