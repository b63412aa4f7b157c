// How a writer stores a large packet into the peer's shm slot, and how the
// link chooses between the two ways while it runs.
//
// A slot's lines are written by one core and read by the other, packet after
// packet. With ordinary (cached) stores the writer first takes each line back
// from the reader's cache, and the reader then takes it from the writer's:
// two transfers between the cores per line, fast where the cores share a
// cache. With streaming (non-temporal) stores the writer's lines go to memory
// without being fetched, and the reader reads them from memory: no transfer
// between the cores, but the reader waits on memory. Which is faster is not a
// constant of the machine: on the 2-core VM this project measures on, the
// transfers between the two vCPUs are 3-10x slower for seconds to minutes at
// a time (docs/benchmarks/single-copy.md, "the slow state"), and streaming
// was 2.4-5x faster then and 1.4-1.9x slower otherwise. So the link measures
// both as it runs: the writer times its copy of each large packet and notes
// it in the slot, the reader times its read of it, and the reader keeps a
// moving average of the packet's cost (the slower of the two sides, which is
// what paces a stream through the ring) per way of storing, and tells the
// writer which is cheaper. The writer stores most packets the preferred way
// and a short run of them now and then the other way, so that a change of
// state is seen. A run, not a lone packet: the first packet stored one way
// after packets stored the other costs what neither way costs in a stream
// (measured: a cached packet amid streamed ones 24 us for 256 KiB, 10 us in
// a cached stream), so the reader leaves it out of the averages.
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata {

// Packets from this size on are timed and may be streamed (smaller ones are
// over before the difference shows, and timing them would cost more).
constexpr size_t kStoreModeMinBytes = 64 * 1024;
// Of every kStoreModeExploreEvery large packets, kStoreModeExploreRun from
// number kStoreModeExploreAt on are stored the way not preferred: early, so
// that a link measures both ways within its first few large calls (but
// after its first packets, which pay for cold caches and would make the way
// they were stored look dearer than it is: measured, 40 us for a 256 KiB
// packet that takes 7 in a warm stream), and rarely (in a stream of 256 KiB
// packets the exploring costs about 1.5% where the preferred way is twice as
// fast). From the 32nd: in 4 MiB launches of 23 calls on 2 ranks, from the
// 64th the slow state's all-to-all took 485 us (streaming alone 253), from
// the 32nd 313, level with the 64th in the usual state; from the 16th, the
// usual state's all-to-all chose streaming too often (261 against 215).
constexpr uint32_t kStoreModeExploreEvery = 256;
constexpr uint32_t kStoreModeExploreAt = 32;
constexpr uint32_t kStoreModeExploreRun = 4;

enum class StoreModeSetting { kAuto, kCached, kStreaming };  // STRATA_SHM_STREAMING unset, 0, 1

// The reader's side of the choice: what packets cost each way.
class StoreModeChooser {
 public:
  // Records one packet of `bytes`, stored streaming or cached, that cost
  // `nanos` (the slower side's time). Returns whether the preferred way changed.
  bool record(bool streamed, size_t bytes, uint64_t nanos);
  bool prefersStreaming() const { return prefersStreaming_; }
  // Nanoseconds per KiB each way (0: not measured yet).
  double cachedNsPerKiB() const { return cost_[0]; }
  double streamingNsPerKiB() const { return cost_[1]; }

 private:
  // A way is preferred once the other costs this much more (no flapping
  // between two ways that cost the same).
  static constexpr double kSwitchMargin = 1.1;
  // Streaming's per-packet cost is compared at this multiple: the packets'
  // times favour it. In the usual state of the 2-core VM, streamed packets
  // measured 10-30% cheaper than cached ones while whole calls ran slower
  // streamed (a sweep's 4 MiB all-to-all 295-342 us against 200-225 cached,
  // 16 MiB 2185-2395 against 1816-2171); in the slow state streaming
  // measures 2.4-5x cheaper and is. The averages it compares are the
  // unweighted ones (cachedNsPerKiB, streamingNsPerKiB, the INFO log's).
  static constexpr double kStreamingBias = 1.4;
  // Weight of the newest packet in the moving averages: a quarter, or a half
  // for a packet stored the way not preferred (an exploring run's: the reader
  // sees three in a row now and then, and they should replace most of what
  // that way's average remembered, which may be from another state).
  static constexpr double kNewestWeight = 0.25;
  static constexpr double kExploredWeight = 0.5;
  // A packet counts at most this many times its way's average: a reader
  // preempted in the middle of one (a rank sharing its core) moves the
  // average by a quarter, not by the length of a time slice.
  static constexpr double kMostOfAverage = 2.0;
  double cost_[2] = {0, 0};  // [cached, streaming]
  bool prefersStreaming_ = false;
};

// The writer's side: how each of its large packets is stored.
class StoreModeWriter {
 public:
  explicit StoreModeWriter(StoreModeSetting setting) : setting_(setting) {}
  // Whether the next large packet is streamed, given what the reader prefers
  // now (read outside exploring runs only: a run explores the other way from
  // the preference it started under, even if the reader changes its mind
  // during the run).
  bool nextStreamed(bool readerPrefersStreaming) {
    if (setting_ != StoreModeSetting::kAuto) return setting_ == StoreModeSetting::kStreaming;
    const uint64_t phase = packets_++ % kStoreModeExploreEvery;
    const bool explore = phase >= kStoreModeExploreAt && phase < kStoreModeExploreAt + kStoreModeExploreRun;
    if (!explore) preferred_ = readerPrefersStreaming;
    return preferred_ != explore;
  }

 private:
  const StoreModeSetting setting_;
  uint64_t packets_ = 0;    // large packets stored so far
  bool preferred_ = false;  // the reader's preference when last read
};

}  // namespace strata
