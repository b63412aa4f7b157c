// The choice between the ring and single copy for the large packets both
// ranks copy (transports/shm/lend_choice.h): the reader's chooser decides only
// after its first ring packets, lends once the ring costs kLendAbove times the
// kernel's copy and goes back only past a margin, and the writer, while it
// lends, sends runs of packets through the ring. The link's use of them is in
// shm_channel_test.cc (PacketsBothRanksCopyAreLentWhenTheRingCostsMore).
#include <gtest/gtest.h>

#include <vector>

#include "transports/shm/lend_choice.h"

namespace strata {
namespace {

constexpr size_t kKiB64 = 65536;
// `nsPerKiB` for a 64 KiB packet.
uint64_t nanosFor(double nsPerKiB) { return uint64_t(nsPerKiB * 64); }

TEST(LendChoice, ChooserLendsOnlyWhenTheRingCostsClearlyMore) {
  LendChooser chooser(100);  // the kernel's copy, measured at set-up: 100 ns per KiB
  EXPECT_FALSE(chooser.prefersLending()) << "the ring until measured";
  // The first 15 ring packets decide nothing, however dear (cold caches).
  for (int i = 0; i < 15; ++i) EXPECT_FALSE(chooser.recordRing(kKiB64, nanosFor(1000))) << i;
  EXPECT_FALSE(chooser.prefersLending());
  EXPECT_TRUE(chooser.recordRing(kKiB64, nanosFor(1000))) << "the 16th: ten times the kernel's copy";
  EXPECT_TRUE(chooser.prefersLending());

  LendChooser close(100);
  for (int i = 0; i < 40; ++i) EXPECT_FALSE(close.recordRing(kKiB64, nanosFor(140))) << "1.4x: within the margin";
  EXPECT_DOUBLE_EQ(close.ringNsPerKiB(), 140);
  EXPECT_TRUE(close.recordRing(kKiB64, nanosFor(400)) || close.recordRing(kKiB64, nanosFor(400)))
      << "dearer packets pull the average past 1.5x";
  // The ring is back once it is under 1.5 / 1.1 times the kernel's copy (its
  // packets, now the writer's exploring runs, move it half the way each).
  bool back = false;
  int packets = 0;
  while (!back && packets < 50) back = close.recordRing(kKiB64, nanosFor(100)), ++packets;  // the state changed
  EXPECT_TRUE(back);
  EXPECT_FALSE(close.prefersLending());
  EXPECT_GT(packets, 1) << "a moving average: one packet does not undo the past";
  EXPECT_LT(close.ringNsPerKiB() * 1.1, close.kernelNsPerKiB() * 1.5);
  EXPECT_FALSE(close.recordRing(0, 100)) << "an empty packet is not a measurement";
  EXPECT_FALSE(close.recordLent(0, 100));
  // Lent packets read now (the ring preferred: a writer's lent packets are
  // rare) move the kernel's average half the way; while lending, a quarter.
  EXPECT_FALSE(close.recordLent(kKiB64, nanosFor(140)));
  EXPECT_DOUBLE_EQ(close.kernelNsPerKiB(), 120);
  EXPECT_TRUE(chooser.prefersLending());
  chooser.recordLent(kKiB64, nanosFor(140));
  EXPECT_DOUBLE_EQ(chooser.kernelNsPerKiB(), 110);
}

TEST(LendChoice, ChooserClampsOutliersAndNeedsTheKernelsCost) {
  LendChooser chooser(100);
  for (int i = 0; i < 16; ++i) chooser.recordRing(kKiB64, nanosFor(100));
  // One packet a hundred times the average (its reader preempted) counts at
  // most twice the average, with a quarter's weight: 125, no switch.
  EXPECT_FALSE(chooser.recordRing(kKiB64, nanosFor(10000)));
  EXPECT_DOUBLE_EQ(chooser.ringNsPerKiB(), 125);
  EXPECT_FALSE(chooser.prefersLending());

  LendChooser unknown;  // the kernel's copy could not be measured
  for (int i = 0; i < 40; ++i) EXPECT_FALSE(unknown.recordRing(kKiB64, nanosFor(10000)));
  EXPECT_FALSE(unknown.prefersLending()) << "nothing to compare with: the ring";
  EXPECT_TRUE(unknown.recordLent(kKiB64, nanosFor(100))) << "a lent packet read gives the kernel's cost";
  EXPECT_TRUE(unknown.prefersLending());
}

TEST(LendChoice, AWriterThatLendsSendsRunsThroughTheRing) {
  LendWriter writer;
  std::vector<bool> lent;
  for (uint32_t i = 0; i < 3 * kLendExploreEvery; ++i) lent.push_back(writer.nextLent(true));
  for (uint32_t i = 0; i < lent.size(); ++i) {
    const uint32_t phase = i % kLendExploreEvery;
    const bool exploring = phase >= kLendExploreAt && phase < kLendExploreAt + kLendExploreRun;
    EXPECT_EQ(lent[i], !exploring) << "packet " << i;
  }
  // The reader changing its mind in the middle of a run does not cut it short.
  LendWriter midRun;
  for (uint32_t i = 0; i < kLendExploreAt + 1; ++i) midRun.nextLent(true);
  for (uint32_t i = 1; i < kLendExploreRun; ++i) EXPECT_FALSE(midRun.nextLent(true)) << "still in the run";
  EXPECT_TRUE(midRun.nextLent(true));
  // A writer told to use the ring never lends, and explores nothing.
  LendWriter ring;
  for (uint32_t i = 0; i < 2 * kLendExploreEvery; ++i) EXPECT_FALSE(ring.nextLent(false)) << i;
}

}  // namespace
}  // namespace strata
