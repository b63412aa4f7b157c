// How large shm packets are stored (transports/shm/store_mode.h): the
// reader's chooser prefers the cheaper way only by a margin, and the writer
// explores the other way in runs (the streaming copy itself:
// streaming_copy_test.cc). The link's use of them is in
// shm_channel_test.cc (LargePacketsFollowTheReadersMeasurements).
#include <gtest/gtest.h>

#include "transports/shm/store_mode.h"

namespace strata {
namespace {

TEST(StoreMode, ChooserPrefersTheCheaperWayOnlyByAMargin) {
  StoreModeChooser chooser;
  EXPECT_FALSE(chooser.prefersStreaming()) << "cached until streaming has been measured";
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(chooser.record(false, 65536, 640000));  // 10000 ns per KiB
  EXPECT_FALSE(chooser.prefersStreaming()) << "one way measured: nothing to compare";
  EXPECT_DOUBLE_EQ(chooser.cachedNsPerKiB(), 10000);
  // Streaming 5% cheaper: within the margin, no switch.
  EXPECT_FALSE(chooser.record(true, 65536, 608000));
  EXPECT_FALSE(chooser.prefersStreaming());
  EXPECT_DOUBLE_EQ(chooser.streamingNsPerKiB(), 9500);
  // Streamed packets 30% cheaper are not enough: streaming's per-packet
  // times favour it (the bias, 1.4), so cached stays.
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(chooser.record(true, 65536, 448000));  // 7000 per KiB
  EXPECT_FALSE(chooser.prefersStreaming());
  EXPECT_LT(chooser.streamingNsPerKiB(), 7100);
  // Twice as cheap (the slow state's 2.4-5x): switch.
  bool switched = false;
  for (int i = 0; i < 10 && !switched; ++i) switched = chooser.record(true, 65536, 320000);
  EXPECT_TRUE(switched);
  EXPECT_TRUE(chooser.prefersStreaming());
  EXPECT_LT(chooser.streamingNsPerKiB() * 1.4 * 1.1, chooser.cachedNsPerKiB());
  // Cached gets cheaper (the state changed): back, once past the margin
  // (the way not preferred moves half the way per packet).
  switched = false;
  int packets = 0;
  while (!switched && packets < 50) switched = chooser.record(false, 131072, 768000), ++packets;  // 6000 per KiB
  EXPECT_TRUE(switched);
  EXPECT_FALSE(chooser.prefersStreaming());
  EXPECT_GT(packets, 1) << "a moving average: one packet does not undo the past";
  EXPECT_FALSE(chooser.record(true, 0, 100)) << "an empty packet is not a measurement";
  // One packet a hundred times the average (its reader was preempted) moves
  // the average by a quarter, not a hundredfold.
  const double before = chooser.cachedNsPerKiB();
  chooser.record(false, 65536, uint64_t(before * 64 * 100));
  EXPECT_DOUBLE_EQ(chooser.cachedNsPerKiB(), before * 1.25);
}

TEST(StoreMode, WriterExploresTheOtherWayInRuns) {
  StoreModeWriter automatic(StoreModeSetting::kAuto), cached(StoreModeSetting::kCached),
      streaming(StoreModeSetting::kStreaming);
  int streamed = 0, runs = 0;
  bool last = false;
  for (uint64_t p = 0; p < 4 * kStoreModeExploreEvery; ++p) {
    const bool s = automatic.nextStreamed(false);
    if (p < kStoreModeExploreAt) EXPECT_FALSE(s) << "packet " << p << ": a link starts the preferred way";
    if (p == kStoreModeExploreAt) EXPECT_TRUE(s) << "and explores early";
    streamed += s;
    runs += s && !last;
    last = s;
    EXPECT_FALSE(cached.nextStreamed(true)) << "STRATA_SHM_STREAMING=0 never streams";
    EXPECT_TRUE(streaming.nextStreamed(false)) << "STRATA_SHM_STREAMING=1 always streams";
  }
  EXPECT_EQ(streamed, int(4 * kStoreModeExploreRun));
  EXPECT_EQ(runs, 4);
  // A reader that changes its mind during a run does not cut the run short.
  StoreModeWriter writer(StoreModeSetting::kAuto);
  for (uint32_t p = 0; p < kStoreModeExploreAt; ++p) ASSERT_FALSE(writer.nextStreamed(false));
  EXPECT_TRUE(writer.nextStreamed(false));
  for (uint32_t p = 1; p < kStoreModeExploreRun; ++p) EXPECT_TRUE(writer.nextStreamed(true)) << "run packet " << p;
  EXPECT_TRUE(writer.nextStreamed(true)) << "after the run: the new preference";
  EXPECT_FALSE(writer.nextStreamed(false));
}

}  // namespace
}  // namespace strata
