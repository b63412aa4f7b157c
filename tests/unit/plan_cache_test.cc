// The plan cache (algo/plan_cache.h): what was kept is found, the least
// recently used plan goes first once the count or the bytes bound is passed,
// and the plan just kept never goes. Many distinct calls in a cycle (a
// model's tensors all-reduced one by one) all stay cached.
#include <gtest/gtest.h>

#include "algo/plan_cache.h"

namespace strata {
namespace {

PlanKey keyOf(size_t count, Coll coll = Coll::kAllReduce) {
  return PlanKey(coll, count, strataFloat32, strataSum, 0, false);
}

// A plan whose algorithm names its count (to tell plans apart) and holds
// `flows` flows (to give it a size).
Plan planOf(size_t count, size_t flows = 1) {
  Plan p;
  p.algorithm = "plan for " + std::to_string(count);
  p.flows.resize(flows);
  return p;
}

TEST(PlanCache, KeepsWhatItWasGivenAndTellsKeysApart) {
  PlanCache cache;
  EXPECT_EQ(cache.find(keyOf(7)), nullptr);
  cache.insert(keyOf(7), planOf(7));
  cache.insert(keyOf(8), planOf(8));
  cache.insert(keyOf(7, Coll::kReduceScatter), planOf(70));
  ASSERT_NE(cache.find(keyOf(7)), nullptr);
  EXPECT_EQ(cache.find(keyOf(7))->algorithm, "plan for 7");
  EXPECT_EQ(cache.find(keyOf(8))->algorithm, "plan for 8");
  EXPECT_EQ(cache.find(keyOf(7, Coll::kReduceScatter))->algorithm, "plan for 70");
  EXPECT_EQ(cache.find(PlanKey(Coll::kAllReduce, 7, strataFloat32, strataSum, 0, true)), nullptr);
  EXPECT_EQ(cache.find(PlanKey(Coll::kAllReduce, 7, strataFloat64, strataSum, 0, false)), nullptr);
  EXPECT_EQ(cache.size(), 3u);
}

TEST(PlanCache, TheLeastRecentlyUsedGoesFirstPastTheCount) {
  PlanCache cache(3);
  for (size_t c = 1; c <= 3; ++c) cache.insert(keyOf(c), planOf(c));
  ASSERT_NE(cache.find(keyOf(1)), nullptr);  // 1 is now the most recent; 2 the least
  EXPECT_EQ(cache.evictions(), 0u);
  cache.insert(keyOf(4), planOf(4));
  EXPECT_EQ(cache.find(keyOf(2)), nullptr);
  EXPECT_EQ(cache.evictions(), 1u);  // a Plan* to 2 taken before would now dangle: the count says so
  for (size_t c : {1, 3, 4}) EXPECT_NE(cache.find(keyOf(c)), nullptr) << c;
  EXPECT_EQ(cache.size(), 3u);
  cache.insert(keyOf(3), planOf(33));  // a replacement lets the old plan go too
  EXPECT_EQ(cache.evictions(), 2u);
  EXPECT_EQ(cache.find(keyOf(3))->algorithm, "plan for 33");
}

TEST(PlanCache, TheBytesBoundEvictsButNeverThePlanJustKept) {
  const size_t one = planBytes(planOf(0, 1000));
  PlanCache cache(100, one * 2 + one / 2);
  cache.insert(keyOf(1), planOf(1, 1000));
  cache.insert(keyOf(2), planOf(2, 1000));
  EXPECT_EQ(cache.size(), 2u);
  cache.insert(keyOf(3), planOf(3, 1000));  // three do not fit: the oldest goes
  EXPECT_EQ(cache.find(keyOf(1)), nullptr);
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_LE(cache.bytes(), one * 2 + one / 2);
  Plan* huge = cache.insert(keyOf(4), planOf(4, 100000));  // alone beyond the bound: kept alone
  ASSERT_NE(huge, nullptr);
  EXPECT_EQ(huge->algorithm, "plan for 4");
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.find(keyOf(4)), huge);
}

TEST(PlanCache, ACycleOfManyDistinctCallsStaysCached) {
  PlanCache cache;
  const size_t distinct = 300;
  for (size_t c = 1; c <= distinct; ++c) cache.insert(keyOf(c), planOf(c));
  for (int round = 0; round < 3; ++round)
    for (size_t c = 1; c <= distinct; ++c) {
      Plan* p = cache.find(keyOf(c));
      ASSERT_NE(p, nullptr) << "count " << c << " round " << round;
      EXPECT_EQ(p->algorithm, "plan for " + std::to_string(c));
    }
  // A plan found stays valid while others are kept after it.
  Plan* first = cache.find(keyOf(1));
  for (size_t c = distinct + 1; c <= distinct + 100; ++c) cache.insert(keyOf(c), planOf(c));
  EXPECT_EQ(cache.find(keyOf(1)), first);
}

}  // namespace
}  // namespace strata
