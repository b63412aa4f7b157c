// Single copy between ranks of one host (Linux cross-memory attach, CMA).
// Over the shm ring a byte is copied twice: the sender copies it into the
// peer's slot, the receiver copies it out. With single copy the sender
// publishes only where the bytes lie (a "lent region": address and length in
// a slot) and the receiver reads them straight from the sender's buffer with
// process_vm_readv, into its destination or, when it reduces, into a small
// cache-resident buffer; the sender's buffer stays lent until the receiver
// has released that slot.
//
// Whether it pays is a property of the machine (the kernel's copy through
// pinned pages against two user-space copies), so it is measured once per
// process, not assumed; whether it is allowed (Yama's ptrace_scope, seccomp in
// containers) is tried on every link at set-up by reading a known word of
// the peer. Either failing leaves the link on the ring alone.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/config.h"
#include "transports/transport.h"

namespace strata {

// This process's measured copy rates (taken once, on its own memory, when
// its first shm link is set up: 10-12 ms).
// The *Cold figures are taken with both ends out of the cache (flushed just
// before), as a call beyond the cache meets them:
// there the kernel's copy (ordinary stores) first reads every destination
// line from memory, while the ring's receiver writes the destination with
// streaming stores (Executor: outputs beyond the cache). 0 where not measured.
struct SingleCopyCosts {
  double memcpyGBps = 0;    // one user-space copy, bytes copied per ns
  double kernelGBps = 0;    // process_vm_readv in 256 KiB calls
  double callUs = 0;        // fixed cost of one process_vm_readv call
  double kernelColdGBps = 0;  // process_vm_readv in 256 KiB calls, both ends in memory
  double ringColdGBps = 0;    // both ring copies: into a cached slot, out of it streaming, 256 KiB at a time
  std::string failure;      // why it could not be measured (the call refused); empty if measured
};
const SingleCopyCosts& singleCopyCosts();

// The smallest packet a link sends as a lent region, as the settings decide
// it: kSingleCopyNever (STRATA_SHM_SINGLE_COPY=0), STRATA_SHM_SINGLE_COPY_BYTES,
// or kSingleCopyMeasured: decided at the link's set-up from both sides'
// measurements (agreedSingleCopyCosts). `why` says which (for the INFO log).
constexpr size_t kSingleCopyNever = ~size_t(0);
constexpr size_t kSingleCopyMeasured = kSingleCopyNever - 1;
// No packet below this is lent on a measured threshold.
constexpr size_t kSingleCopyMinBytes = 64 * 1024;
size_t singleCopyThreshold(const Config& config, std::string* why);

// The smallest packet lent, by how much of the ring's time lending saves.
// Where both ranks also receive plain bytes (an all-gather, an all-to-all, a
// chain's middle) the sender's copy into the ring and the receiver's copy out
// both sit on busy cores, and one kernel copy replaces two user copies:
// single copy pays where n / kernel + call < 2 n / memcpy (againstTwoCopies).
// It replaces only one where the sender receives nothing after it (a
// broadcast's root, a reduce's leaf: its copy into the ring runs on its
// otherwise idle core while the receiver copies out) or where the receiver
// reduces what it gets (it reads the ring from cache as it reduces, and
// lending only moves the sender's copy to it as a kernel copy): single copy
// pays there only where n / kernel + call < n / memcpy (againstOneCopy).
// A one-way stream whose receiver writes plain bytes (a broadcast's root to
// its receiver) can do better than one kernel copy: the idle sender writes
// part of the region into the receiver's destination with process_vm_writev
// while the receiver reads the rest (a shared read, shm_ring.h), so each core
// moves half: that pays where n / (2 kernel) + call < n / memcpy
// (sharedAgainstOneCopy, from kSharedReadMinBytes, transport.h).
// Where both ranks receive plain bytes into outputs beyond the cache
// (LendSaving::kTwoCopiesStreamed) the two copies are weighed cold:
// n / kernelCold + call < n / ringCold (againstTwoCopiesStreamed; as
// againstTwoCopies where the cold rates were not measured). The measurement
// keeps the slot in one core's cache, where the ring moves it between two:
// on the Xeon VM it put the ring 1.7-1.8x ahead, 2-rank all-gathers of
// 16-64 MiB measured it 1.35-1.45x ahead.
struct SingleCopyThresholds {
  size_t againstTwoCopies = kSingleCopyNever;
  size_t againstOneCopy = kSingleCopyNever;
  size_t sharedAgainstOneCopy = kSingleCopyNever;
  size_t againstTwoCopiesStreamed = kSingleCopyNever;
};

// The thresholds these measured costs give (from kSingleCopyMinBytes;
// kSingleCopyNever where the kernel copy does not pay at any size). `why`
// says what was measured and decided (for the INFO log).
SingleCopyThresholds singleCopyThresholdsFor(const SingleCopyCosts& costs, std::string* why);

// The costs both sides of a link decide by: the mean of each side's
// measurement, the same whichever side computes it, so that the two
// directions of a link lend alike. Each process measures its own memory,
// and on a noisy host two measurements straddle the break-even: a 2-rank
// 4 MiB all-to-all with one direction lending and the other on the ring
// took 630-750 us, with both alike 455-530 (the Intel Xeon VM). A side
// that could not measure (`failure`, or nothing measured: kernelGBps 0)
// leaves the other side's costs; where neither measured, the first's.
SingleCopyCosts agreedSingleCopyCosts(const SingleCopyCosts& a, const SingleCopyCosts& b);

// Whether this process may read `n` bytes at `remote` in process `pid` and
// finds `expected` there. On failure `why` names the cause (errno's text).
bool canReadPeerMemory(pid_t pid, uint64_t remote, const void* expected, size_t n, std::string* why);

// Reads `n` bytes at `remote` in process `pid` (rank `peer`) into `dst`.
// Throws strataRemoteError naming the rank if they cannot be read (the
// process exited: ESRCH; an address it does not map: EFAULT).
void readPeerMemory(pid_t pid, uint64_t remote, void* dst, size_t n, int peer);

// Writes `n` bytes from `src` to `remote` in process `pid`; false (errno
// set) if it could not write them all.
bool writePeerMemory(pid_t pid, const void* src, uint64_t remote, size_t n);

}  // namespace strata
