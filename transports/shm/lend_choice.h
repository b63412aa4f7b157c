// Whether a link lends its large packets (single copy, single_copy.h) or
// sends them through the ring, for the packets both ranks copy (an
// all-gather's, an all-to-all's: each rank sends and receives at once, so
// the ring's copy in and copy out both sit on busy cores, and one kernel copy
// by the reader replaces them), chosen while the link runs.
//
// The kernel's copy (process_vm_readv) costs about the same whatever the VM
// is doing; the ring's two user-space copies do not: on the 2-core VM this
// project measures on they are 3-10x slower for seconds to minutes at a time
// (the "slow state", docs/benchmarks/single-copy.md), and a 4 MiB all-to-all
// took 450-490 us through the ring then against 240-260 us lent, while in the
// usual state the ring took 190-220 us against the same 240-260 lent. So the
// reader keeps a moving average of what the ring's packets cost per KiB (the
// writer's copy plus its own, both sides' work) and of what its kernel reads
// of lent packets cost (first from the process's measured copy rates,
// single_copy.h), and tells the writer to lend once the ring costs more than
// the kernel's copy by a margin (kLendAbove). While it lends, the writer sends a short run
// of packets through the ring now and then, so that the ring's return to its
// usual pace is seen. The packets where only one side's copy is saved (a
// broadcast's root, a reducing reader) keep the threshold measured once per
// process: measured in the slow state, lending them was no faster there.
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata {

// Of every kLendExploreEvery large packets a lending writer could lend,
// kLendExploreRun from number kLendExploreAt on go through the ring (the
// first of them is left out of the averages: it follows lent packets, and the
// ring's slots are cold).
constexpr uint32_t kLendExploreEvery = 64;
constexpr uint32_t kLendExploreAt = 8;
constexpr uint32_t kLendExploreRun = 4;

// The reader's side: what the ring's large packets and the lent ones cost.
class LendChooser {
 public:
  // `kernelNsPerKiB`: the kernel's copy as measured at set-up (0: unknown,
  // never lend until a lent packet has been read).
  explicit LendChooser(double kernelNsPerKiB = 0) : kernel_(kernelNsPerKiB) {}
  // A packet of `bytes` through the ring that cost both sides `nanos` (the
  // writer's copy plus the reader's). Returns whether the preference changed.
  bool recordRing(size_t bytes, uint64_t nanos);
  // A lent packet of `bytes` the reader's kernel copy read in `nanos`.
  bool recordLent(size_t bytes, uint64_t nanos);
  bool prefersLending() const { return prefersLending_; }
  double ringNsPerKiB() const { return ring_; }
  double kernelNsPerKiB() const { return kernel_; }

 private:
  // Lending is preferred once the ring costs this many times the kernel's
  // copy, and the ring again once it costs under kLendAbove / kSwitchMargin
  // times it. Not 1: the two figures are each side's own view (the ring's
  // packets timed by both, the lent ones by the reader alone, as both ranks
  // read at once), and in the usual state, where a 4 MiB all-to-all or
  // all-gather through the ring took 0.8x its time lent, the ring's packets
  // measured 0.9-1.3x the lent ones; in the slow state, 2-4x.
  static constexpr double kLendAbove = 1.5;
  static constexpr double kSwitchMargin = 1.1;
  // Ring packets measured before the first choice: a link's first packets
  // pay for cold caches (the ring's first measured 180-200 ns per KiB where
  // the rest took 100-120).
  static constexpr uint32_t kWarmUpPackets = 16;
  // Weight of the newest packet: a quarter, or a half for packets of the way
  // not preferred (a writer's exploring run: they replace most of what the
  // average remembers, which may be from another state of the machine).
  static constexpr double kNewestWeight = 0.25;
  static constexpr double kExploredWeight = 0.5;
  // A packet counts at most this many times its average (a preempted reader).
  static constexpr double kMostOfAverage = 2.0;
  bool decide();
  double ring_ = 0, kernel_ = 0;  // ns per KiB (0: not measured)
  uint32_t ringPackets_ = 0;
  bool prefersLending_ = false;
};

// The writer's side: whether each large packet it may lend is lent.
class LendWriter {
 public:
  // Given what the reader prefers now (read outside exploring runs: a run
  // goes through the ring to its end even if the reader changes its mind).
  bool nextLent(bool readerPrefersLending) {
    const uint64_t phase = packets_++ % kLendExploreEvery;
    const bool explore = phase >= kLendExploreAt && phase < kLendExploreAt + kLendExploreRun;
    if (!explore) preferred_ = readerPrefersLending;
    return preferred_ && !explore;
  }

 private:
  uint64_t packets_ = 0;
  bool preferred_ = false;
};

}  // namespace strata
