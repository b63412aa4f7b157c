#include "transports/shm/single_copy.h"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <initializer_list>
#include <mutex>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include "core/error.h"
#include "kernels/cpu/streaming_copy.h"

namespace strata {

namespace {

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Reads `n` bytes of this process at `from` into `to` through the kernel, in
// calls of `piece` bytes; false (errno set) if a call is refused.
bool readSelf(const uint8_t* from, uint8_t* to, size_t n, size_t piece) {
  for (size_t off = 0; off < n; off += piece) {
    size_t k = std::min(piece, n - off);
    iovec local{to + off, k}, remote{const_cast<uint8_t*>(from) + off, k};
    if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != ssize_t(k)) return false;
  }
  return true;
}

#if defined(__x86_64__)
// Whether the CPU has clflushopt (CPUID leaf 7, EBX bit 23).
bool hasClflushopt() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b >> 23 & 1);
}
// Flushes the lines of n bytes at p out of every cache, and waits for it.
__attribute__((target("clflushopt"))) void flushLines(uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; i += 64) _mm_clflushopt(p + i);
  _mm_mfence();
}
#endif

// Leaves none of the first n bytes of `buffers` in the cache, as a call
// beyond the cache finds them: flushed where the CPU can (clflushopt: a
// tenth of a ms for 2 MiB), else written again with streaming stores from
// `pattern`, kPiece bytes of it at a time (slower: in a ThreadSanitizer
// build, whose checks slow that copy most, the whole measurement took
// 265 ms evicting 2 MiB so, 100 ms flushing 1 MiB).
template <size_t kPiece>
void evictFromCache(std::initializer_list<uint8_t*> buffers, size_t n, const uint8_t* pattern) {
#if defined(__x86_64__)
  if (hasClflushopt()) {
    for (uint8_t* b : buffers) flushLines(b, n);
    return;
  }
#endif
  for (uint8_t* b : buffers)
    for (size_t off = 0; off < n; off += kPiece) kernels::streamingCopyUnfenced(b + off, pattern, std::min(kPiece, n - off));
  kernels::streamingFence();
}

// 4 MiB (beyond a core's cache, as the large messages single copy is for),
// best of three, the ways interleaved so that a busy neighbour core slows
// them alike; the cold figures on 1 MiB evicted from the cache first.
// 10-12 ms on the Xeon VM (its buffers' page faults included), once per
// process, at its first shm link's set-up.
SingleCopyCosts measure() {
  constexpr size_t kBytes = size_t(4) << 20, kColdBytes = size_t(1) << 20, kPiece = 256 * 1024, kSmall = 4096,
                   kSmallCalls = 64;
  std::vector<uint8_t> from(kBytes), to(kBytes), slot(kPiece);
  for (size_t i = 0; i < kBytes; i += 64) from[i] = uint8_t(i >> 6);
  std::memset(to.data(), 1, kBytes);
  std::memset(slot.data(), 2, kPiece);
  SingleCopyCosts c;
  double bestCopy = 1e9, bestKernel = 1e9, bestSmall = 1e9, bestKernelCold = 1e9, bestRingCold = 1e9;
  for (int round = 0; round < 3; ++round) {
    evictFromCache<kPiece>({from.data(), to.data()}, kColdBytes, slot.data());
    auto t0 = std::chrono::steady_clock::now();
    if (!readSelf(from.data(), to.data(), kColdBytes, kPiece)) {
      c.failure = format("process_vm_readv refused: %s", std::strerror(errno));
      return c;
    }
    bestKernelCold = std::min(bestKernelCold, secondsSince(t0));
    evictFromCache<kPiece>({from.data(), to.data()}, kColdBytes, slot.data());
    t0 = std::chrono::steady_clock::now();
    for (size_t off = 0; off < kColdBytes; off += kPiece) {  // the ring's two copies, a slot's worth at a time
      std::memcpy(slot.data(), from.data() + off, kPiece);
      kernels::streamingCopyUnfenced(to.data() + off, slot.data(), kPiece);
    }
    kernels::streamingFence();
    bestRingCold = std::min(bestRingCold, secondsSince(t0));
  }
  for (size_t i = 0; i < kBytes; i += 64) from[i] = uint8_t(i >> 6);
  for (int round = 0; round < 3; ++round) {
    auto t0 = std::chrono::steady_clock::now();
    std::memcpy(to.data(), from.data(), kBytes);
    bestCopy = std::min(bestCopy, secondsSince(t0));
    t0 = std::chrono::steady_clock::now();
    if (!readSelf(from.data(), to.data(), kBytes, kPiece)) {
      c.failure = format("process_vm_readv refused: %s", std::strerror(errno));
      return c;
    }
    bestKernel = std::min(bestKernel, secondsSince(t0));
    t0 = std::chrono::steady_clock::now();
    readSelf(from.data(), to.data(), kSmall * kSmallCalls, kSmall);
    bestSmall = std::min(bestSmall, secondsSince(t0));
  }
  c.memcpyGBps = double(kBytes) / bestCopy / 1e9;
  c.kernelGBps = double(kBytes) / bestKernel / 1e9;
  const double perCallUs = bestSmall * 1e6 / double(kSmallCalls);
  c.callUs = std::max(0.0, perCallUs - double(kSmall) / (c.kernelGBps * 1e3));
  c.kernelColdGBps = double(kColdBytes) / bestKernelCold / 1e9;
  c.ringColdGBps = double(kColdBytes) / bestRingCold / 1e9;
  return c;
}

}  // namespace

const SingleCopyCosts& singleCopyCosts() {
  static std::once_flag once;
  static SingleCopyCosts costs;
  std::call_once(once, [] { costs = measure(); });
  return costs;
}

size_t singleCopyThreshold(const Config& config, std::string* why) {
  if (!config.shmSingleCopy) {
    *why = "off (STRATA_SHM_SINGLE_COPY=0)";
    return kSingleCopyNever;
  }
  if (config.shmSingleCopyBytes) {
    *why = format("from %zu bytes (STRATA_SHM_SINGLE_COPY_BYTES)", config.shmSingleCopyBytes);
    return config.shmSingleCopyBytes;
  }
  *why = "measured at set-up";
  return kSingleCopyMeasured;
}

namespace {

// Where one kernel copy (ns per byte) and a call beat the ring's copies (ns
// per byte), from kSingleCopyMinBytes; kSingleCopyNever if at no size.
size_t breakEvenBytes(double ringNsPerByte, double singleNsPerByte, double callUs) {
  if (singleNsPerByte >= ringNsPerByte) return kSingleCopyNever;
  const double bytes = callUs * 1e3 / (ringNsPerByte - singleNsPerByte);
  return bytes >= double(kSingleCopyNever / 2) ? kSingleCopyNever
                                               : std::max<size_t>(kSingleCopyMinBytes, size_t(bytes));
}
// The same against `userCopies` user copies of the ring, cached.
size_t breakEvenBytes(const SingleCopyCosts& c, double userCopies) {
  return breakEvenBytes(userCopies / c.memcpyGBps, 1.0 / c.kernelGBps, c.callUs);
}

std::string describeThreshold(size_t bytes) {
  return bytes == kSingleCopyNever ? std::string("never") : format("from %zu bytes", bytes);
}

}  // namespace

SingleCopyThresholds singleCopyThresholdsFor(const SingleCopyCosts& c, std::string* why) {
  if (!c.failure.empty()) {
    *why = "off: " + c.failure;
    return {};
  }
  SingleCopyThresholds t;
  t.againstTwoCopies = breakEvenBytes(c, 2.0);
  t.againstOneCopy = breakEvenBytes(c, 1.0);
  // n / (2 kernel) + call < n / memcpy is, within one call's cost, the
  // break-even against two copies.
  t.sharedAgainstOneCopy = t.againstTwoCopies == kSingleCopyNever ? kSingleCopyNever
                                                                  : std::max(t.againstTwoCopies, kSharedReadMinBytes);
  const bool cold = c.kernelColdGBps > 0 && c.ringColdGBps > 0;
  t.againstTwoCopiesStreamed =
      cold ? breakEvenBytes(1.0 / c.ringColdGBps, 1.0 / c.kernelColdGBps, c.callUs) : t.againstTwoCopies;
  std::string measured = format("measured on this host: process_vm_readv %.1f GB/s + %.1f us a call, "
                                "memcpy %.1f GB/s", c.kernelGBps, c.callUs, c.memcpyGBps);
  if (cold)
    measured += format("; out of the cache process_vm_readv %.1f GB/s, the ring's two copies %.1f GB/s",
                       c.kernelColdGBps, c.ringColdGBps);
  if (t.againstTwoCopies == kSingleCopyNever && t.againstTwoCopiesStreamed == kSingleCopyNever)
    *why = "off: " + measured + " (slower than the ring's two copies)";
  else
    *why = format("%s where both ranks also receive plain bytes (the ring's two copies; %s into outputs "
                  "beyond the cache, which the ring writes streaming), %s in one-way streams and to reducing "
                  "receivers (the ring costs one copy's time there), %s shared by an idle sender and a plain "
                  "receiver: %s",
                  describeThreshold(t.againstTwoCopies).c_str(),
                  describeThreshold(t.againstTwoCopiesStreamed).c_str(), describeThreshold(t.againstOneCopy).c_str(),
                  describeThreshold(t.sharedAgainstOneCopy).c_str(), measured.c_str());
  return t;
}

SingleCopyCosts agreedSingleCopyCosts(const SingleCopyCosts& a, const SingleCopyCosts& b) {
  const bool aMeasured = a.failure.empty() && a.kernelGBps > 0, bMeasured = b.failure.empty() && b.kernelGBps > 0;
  if (!aMeasured || !bMeasured) return aMeasured || !bMeasured ? a : b;
  // a + b == b + a exactly in floating point: both sides get the same bits.
  SingleCopyCosts mean;
  mean.memcpyGBps = (a.memcpyGBps + b.memcpyGBps) / 2;
  mean.kernelGBps = (a.kernelGBps + b.kernelGBps) / 2;
  mean.callUs = (a.callUs + b.callUs) / 2;
  // The cold figures where both sides took them (else neither side uses them).
  if (a.kernelColdGBps > 0 && a.ringColdGBps > 0 && b.kernelColdGBps > 0 && b.ringColdGBps > 0) {
    mean.kernelColdGBps = (a.kernelColdGBps + b.kernelColdGBps) / 2;
    mean.ringColdGBps = (a.ringColdGBps + b.ringColdGBps) / 2;
  }
  return mean;
}

bool canReadPeerMemory(pid_t pid, uint64_t remote, const void* expected, size_t n, std::string* why) {
  std::vector<uint8_t> got(n);
  iovec local{got.data(), n}, far{reinterpret_cast<void*>(remote), n};
  ssize_t r = process_vm_readv(pid, &local, 1, &far, 1, 0);
  if (r != ssize_t(n)) {
    *why = format("process_vm_readv refused: %s", r < 0 ? std::strerror(errno) : "short read");
    return false;
  }
  if (std::memcmp(got.data(), expected, n) != 0) {
    *why = "the peer's memory did not hold what it announced (another pid namespace?)";
    return false;
  }
  return true;
}

void readPeerMemory(pid_t pid, uint64_t remote, void* dst, size_t n, int peer) {
  uint8_t* to = static_cast<uint8_t*>(dst);
  while (n > 0) {
    iovec local{to, n}, far{reinterpret_cast<void*>(remote), n};
    ssize_t r = process_vm_readv(pid, &local, 1, &far, 1, 0);
    if (r <= 0) {
      int e = r < 0 ? errno : EFAULT;
      if (e == EINTR) continue;
      fail(strataRemoteError, "cannot read %zu bytes that rank %d lent at 0x%llx (single copy): %s%s", n, peer,
           (unsigned long long)remote, std::strerror(e),
           e == ESRCH ? " (the process has exited)" : e == EFAULT ? " (it does not map them)" : "");
    }
    to += r;
    remote += uint64_t(r);
    n -= size_t(r);
  }
}

bool writePeerMemory(pid_t pid, const void* src, uint64_t remote, size_t n) {
  const uint8_t* from = static_cast<const uint8_t*>(src);
  while (n > 0) {
    iovec local{const_cast<uint8_t*>(from), n}, far{reinterpret_cast<void*>(remote), n};
    ssize_t r = process_vm_writev(pid, &local, 1, &far, 1, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      if (r == 0) errno = EFAULT;
      return false;
    }
    from += r;
    remote += uint64_t(r);
    n -= size_t(r);
  }
  return true;
}

}  // namespace strata
