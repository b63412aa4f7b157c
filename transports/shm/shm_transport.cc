#include "transports/shm/shm_transport.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <mutex>
#include <set>
#include <vector>
#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "core/log.h"
#include "kernels/cpu/dual_copy.h"
#include "kernels/cpu/streaming_copy.h"
#include "obs/op_clock.h"
#include "transports/liveness.h"
#include "transports/net/transport_choice.h"
#include "transports/shm/mapped_memory.h"
#include "transports/shm/shm_ring.h"
#include "transports/shm/single_copy.h"
#include "transports/shm/store_mode.h"

namespace strata {

ShmSegment::~ShmSegment() {
  if (base_) munmap(base_, bytes_);
}

void ShmSegment::create(const char* name, size_t slotBytes, int slots) {
  bytes_ = bytesFor(slotBytes, uint32_t(slots));
  int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) fail(strataSystemError, "shm_open(%s) failed: %s", name, std::strerror(errno));
  if (ftruncate(fd, off_t(bytes_)) != 0) {
    int e = errno;
    ::close(fd);
    shm_unlink(name);
    fail(strataSystemError, "cannot size shared memory %s to %zu bytes: %s", name, bytes_,
         std::strerror(e));
  }
  // The pages are allocated and mapped now, when the link is made, not by the
  // first packets that reach them: a /dev/shm too small for the inbox fails
  // here with a sentence (a page it cannot back would be SIGBUS at first
  // touch), and the first calls of each new size do not pay a page fault per
  // 4 KiB of every slot they fill first (measured: 50-240 us a call for the
  // first four calls of each size from 128 KiB, 2 ranks).
  if (int e = posix_fallocate(fd, 0, off_t(bytes_)); e != 0) {
    ::close(fd);
    shm_unlink(name);
    fail(strataSystemError,
         "cannot allocate %zu bytes of shared memory for %s: %s (/dev/shm is too small for this "
         "many links between local ranks: enlarge it, e.g. docker run --shm-size, or lower "
         "STRATA_SHM_SLOTS or STRATA_SHM_SLOT_BYTES)", bytes_, name, std::strerror(e));
  }
  base_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  ::close(fd);
  if (base_ == MAP_FAILED) {
    base_ = nullptr;
    shm_unlink(name);
    failErrno("mmap(shm inbox)");
  }
  ShmRingHeader* h = new (base_) ShmRingHeader();
  h->consumed.store(0);
  h->slotBytes = slotBytes;
  h->slots = uint32_t(slots);
  h->readerReadsWriterMemory.store(0);
  h->writerShouldStream.store(0);
  adoptGeometry(uint32_t(slots), slotBytes);
  for (int i = 0; i < slots; ++i) new (slotHeader(uint64_t(i))) ShmSlotHeader{{0}, 0, 0};
  for (int i = 0; i < kShmSmallSlots; ++i) new (slotHeader(uint64_t(i), true)) ShmSlotHeader{{0}, 0, 0};
}

void ShmSegment::open(const char* name) {
  int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) fail(strataSystemError, "cannot open the peer's shared memory %s: %s", name, std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || size_t(st.st_size) < kShmHeaderBytes) {
    ::close(fd);
    fail(strataSystemError, "the peer's shared memory %s is too small", name);
  }
  bytes_ = size_t(st.st_size);
  // Mapped at once, as the creator's mapping is, for the same first packets.
  base_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  ::close(fd);
  if (base_ == MAP_FAILED) {
    base_ = nullptr;
    failErrno("mmap(peer shm inbox)");
  }
  ShmRingHeader* h = header();
  adoptGeometry(h->slots, h->slotBytes);
  if (slots_ < 2 || slots_ > kMaxShmSlots || slotBytes_ == 0 || slotBytes_ > kSlotLengthMask ||
      bytesFor(slotBytes_, slots_) > bytes_)
    fail(strataSystemError, "the peer's shared memory %s has an invalid layout", name);
}

namespace {

// Logs how single copy was decided, once per process and distinct decision
// (every shm link decides, and most decide alike).
void logSingleCopy(const std::string& why) {
  static std::mutex mutex;
  static std::set<std::string> logged;
  std::lock_guard<std::mutex> lock(mutex);
  if (logged.insert(why).second) STRATA_INFO("shm single copy: %s", why.c_str());
}

// What a side tells its peer at set-up: its inbox's name, then (single copy)
// its pid and where its inbox is mapped in its own address space, so that the
// peer can check it may read this process's memory, and its measured copy
// rates (`costs`: the five figures travel, all 0 where it did not measure
// them), so that both sides decide whether to lend from the same figures
// (agreedSingleCopyCosts).
struct ShmSetup {
  std::string inboxName;
  uint64_t pid = 0;
  uint64_t inboxAddress = 0;
  SingleCopyCosts costs;
};
constexpr size_t kSetupWords = 7;  // after the name's NUL: pid, address, five rates

SetupBlob encodeSetup(const ShmSetup& s) {
  SetupBlob b(s.inboxName.begin(), s.inboxName.end());
  b.push_back(0);
  const size_t at = b.size();
  b.resize(at + 8 * kSetupWords);
  std::memcpy(b.data() + at, &s.pid, 8);
  std::memcpy(b.data() + at + 8, &s.inboxAddress, 8);
  std::memcpy(b.data() + at + 16, &s.costs.memcpyGBps, 8);
  std::memcpy(b.data() + at + 24, &s.costs.kernelGBps, 8);
  std::memcpy(b.data() + at + 32, &s.costs.callUs, 8);
  std::memcpy(b.data() + at + 40, &s.costs.kernelColdGBps, 8);
  std::memcpy(b.data() + at + 48, &s.costs.ringColdGBps, 8);
  return b;
}

bool decodeSetup(const SetupBlob& b, ShmSetup* s) {
  auto nul = std::find(b.begin(), b.end(), uint8_t(0));
  if (nul == b.end() || size_t(b.end() - nul) != 1 + 8 * kSetupWords) return false;
  s->inboxName.assign(b.begin(), nul);
  std::memcpy(&s->pid, &*nul + 1, 8);
  std::memcpy(&s->inboxAddress, &*nul + 9, 8);
  std::memcpy(&s->costs.memcpyGBps, &*nul + 17, 8);
  std::memcpy(&s->costs.kernelGBps, &*nul + 25, 8);
  std::memcpy(&s->costs.callUs, &*nul + 33, 8);
  std::memcpy(&s->costs.kernelColdGBps, &*nul + 41, 8);
  std::memcpy(&s->costs.ringColdGBps, &*nul + 49, 8);
  for (double rate : {s->costs.memcpyGBps, s->costs.kernelGBps, s->costs.callUs, s->costs.kernelColdGBps,
                      s->costs.ringColdGBps})
    if (!(rate >= 0 && rate < 1e9)) return false;  // NaN too
  const std::string& n = s->inboxName;
  return !n.empty() && n[0] == '/' && n.find('/', 1) == std::string::npos && n.size() <= 255;
}

class ShmChannel : public LivenessChannel {
 public:
  // `lendFrom`: packets from these sizes on are lent (single copy) once the
  // peer has said it can read this process, by what the sender does
  // meanwhile (single_copy.h); kSingleCopyNever: never.
  // `mappedFrom`: packets from this size on that lie in strataMemAlloc
  // memory are lent by name (no permission needed: the peer maps the region).
  // `peerProcess`: the peer's pid (`peerPid`: the same, or 0 where this side
  // may not read the peer's memory with process_vm_readv).
  // `storeMode`: how large packets are stored into the peer's slots.
  // `timeoutMs`: the longest a shared read waits for the peer's chunks.
  ShmChannel(std::unique_ptr<ShmSegment> inbox, std::unique_ptr<ShmSegment> outbox, Fd socket,
             int peer, pid_t peerProcess, pid_t peerPid, SingleCopyThresholds lendFrom, size_t mappedFrom,
             StoreModeSetting storeMode, int timeoutMs)
      : LivenessChannel(std::move(socket), peer), inbox_(std::move(inbox)), outbox_(std::move(outbox)),
        peerProcess_(peerProcess), peerPid_(peerPid), lendFrom_(lendFrom), mappedFrom_(mappedFrom),
        storeWriter_(storeMode), releaseEvery_{std::max<uint32_t>(1, inbox_->slots() / 4), kShmSmallSlots / 4},
        timeoutMs_(timeoutMs) {}

  const char* transportName() const override { return "shm"; }

  // A packet of up to kShmSmallSlotBytes goes in the small lane (shm_ring.h).
  Span acquireSend(size_t maxBytes) override {
    const bool small = maxBytes <= kShmSmallSlotBytes;
    if (!slotFree(small)) return {};
    smallOut_ = small;
    compactOut_ = maxBytes <= kShmCompactBytes;
    size_t capacity = small ? kShmSmallSlotBytes : outbox_->slotBytes();
    return {outbox_->payload(produced_, compactOut_, small), maxBytes < capacity ? maxBytes : capacity};
  }

  void commitSend(size_t bytes) override {
    // A packet's length says where its bytes start (shm_ring.h): one
    // written after the header but short enough to be compact moves up.
    const bool small = smallOut_;
    if (bytes <= kShmCompactBytes && !compactOut_) [[unlikely]]
      std::memmove(outbox_->payload(produced_, true, small), outbox_->payload(produced_, false, small), bytes);
    outbox_->slotHeader(produced_, small)->word.store(shmSlotWord(produced_, bytes, ahead_ ? kWriterAhead : 0),
                                                      std::memory_order_release);
    ++produced_;
    // The next packet likely has this one's size (a stream of equal calls).
    // Its slot's lines were last read by the peer: where the slot is known
    // free, take them for writing now, while this packet travels, so that
    // filling it does not wait for them (measured: a 2-rank 32-byte
    // broadcast 0.38 -> 0.31 us a call).
    if (produced_ - peerConsumed_ < outbox_->window(small))
      prefetchForWrite(outbox_->slotHeader(produced_, small),
                       std::min(kShmSlotHeaderBytes + bytes, kPrefetchedForWriteBytes));
  }

  size_t trySend(const void* src, size_t n) override { return sendCopying(src, n, nullptr); }
  size_t trySendCopying(const void* src, size_t n, void* streamedTo) override {
    return sendCopying(src, n, streamedTo);
  }

  // A packet copied into the slot from src and, where `streamedTo` is set,
  // there too with streaming stores in the same pass (trySendCopying). A
  // large packet is stored cached or streaming, as the reader's
  // measurements prefer (store_mode.h), and its copy is timed for them (the
  // copy to streamedTo with it, whichever way the slot is stored).
  size_t sendCopying(const void* src, size_t n, void* streamedTo) {
    const bool large = n >= kStoreModeMinBytes && outbox_->slotBytes() >= kStoreModeMinBytes;
    if (!large && !streamedTo) return Channel::trySend(src, n);
    Span s = acquireSend(n);
    if (s.size == 0) return 0;
    if (!large) {
      kernels::copyToTwo(s.data, false, streamedTo, true, src, s.size);
      commitSend(s.size);
      return s.size;
    }
    const bool readerPrefers = outbox_->header()->writerShouldStream.load(std::memory_order_relaxed) != 0;
    const bool streamed = storeWriter_.nextStreamed(readerPrefers);
    const uint64_t start = opclock::steadyNs();
    if (streamedTo) kernels::copyToTwo(s.data, streamed, streamedTo, true, src, s.size);
    else if (streamed) kernels::streamingCopy(s.data, src, s.size);
    else std::memcpy(s.data, src, s.size);
    const uint64_t nanos = std::min<uint64_t>(opclock::steadyNs() - start, kWriterNanosMask);
    ShmSlotHeader* slot = outbox_->slotHeader(produced_);
    slot->timedPacket = uint32_t(produced_ + 1);
    slot->writerNanos = uint32_t(nanos) | (streamed ? kStreamedPacket : 0) |
                        (streamed != lastStreamed_ ? kFirstOfItsWay : 0);
    lastStreamed_ = streamed;
    commitSend(s.size);
    return s.size;
  }

  // Large packets from memory the caller keeps are lent: one slot says where
  // they lie and the peer reads them from there.
  size_t trySendStable(const void* src, size_t n, size_t lendable, LendSaving saves) override {
    MappedRef ref;
    const LendPath path = lendPath(src, n, saves, &ref);
    if (path == LendPath::kMapped) {
      MappedRef all;  // all of them, where one region holds them
      if (lendable > n && findMapped(src, lendable, &all)) ref = all;
      return lendMapped(ref);
    }
    if (path == LendPath::kCopied) return trySend(src, n);
    const bool shared = sharesReads(saves);
    if (!slotFree(false)) return 0;
    n = std::min<size_t>(std::max(n, lendable), kMaxLentBytes);
    ShmLentRegion region{reinterpret_cast<uint64_t>(src), n};
    std::memcpy(outbox_->payload(produced_), &region, sizeof region);
    const bool shareable = shared && n >= kSharedReadMinBytes;
    lentBySlot_[produced_ % outbox_->slots()] = LentRecord{produced_, region.address, n, shareable};
    outbox_->slotHeader(produced_)->word.store(
        shmSlotWord(produced_, sizeof region, kLentRegion | (shareable ? kShareable : 0)), std::memory_order_release);
    lentUntil_ = ++produced_;
    return n;
  }

  bool wouldLend(const void* src, size_t n, LendSaving saves) override {
    MappedRef ref;
    return lendPath(src, n, saves, &ref) != LendPath::kCopied;
  }

  // How trySendStable sends n bytes at src: from memory the peer maps (`ref`
  // set), lent for the peer to read, or copied through the ring.
  enum class LendPath { kMapped, kLent, kCopied };
  LendPath lendPath(const void* src, size_t n, LendSaving saves, MappedRef* ref) {
    if (n >= mappedFrom_ && findMapped(src, n, ref)) return LendPath::kMapped;
    return n >= lendingFrom(saves) && peerReadsUs() ? LendPath::kLent : LendPath::kCopied;
  }

  // A shared read needs this side to write the peer's memory: allowed
  // where it may read it (the same ptrace check), and not given up on.
  bool sharesReads(LendSaving saves) const {
    return saves == LendSaving::kOneCopyShared && peerPid_ && !sharingBroken_;
  }
  // From which packet size trySendStable lends bytes that save `saves`.
  size_t lendingFrom(LendSaving saves) const {
    return sharesReads(saves)                           ? lendFrom_.sharedAgainstOneCopy
           : saves == LendSaving::kTwoCopies         ? lendFrom_.againstTwoCopies
           : saves == LendSaving::kTwoCopiesStreamed ? lendFrom_.againstTwoCopiesStreamed
                                                     : lendFrom_.againstOneCopy;
  }

  bool sendBuffersLent() override {
    if (lentUntil_ <= peerConsumed_) return false;
    helpPeerRead();
    peerConsumed_ = outbox_->header()->consumed.load(std::memory_order_acquire);
    if (lentUntil_ <= peerConsumed_) return false;
    if (live_.gone()) live_.throwIfGone();
    return true;
  }

  ConstSpan peekRecv() override {
    if (!havePacket()) return {};
    if (!lent_) {
      if (timed_) peekedAt_ = opclock::steadyNs();
      // A branch, not a select: the reads of a longer packet's lines are
      // then issued on the prediction, beside the word's line, instead of
      // waiting for its length to arrive (measured with a select, 2 ranks:
      // 128-512 B reduce-scatters and all-reduces 6-13% slower).
      if (length_ <= kShmCompactBytes) [[unlikely]]
        return {inSlot_ + kShmCompactOffset + offset_, length_ - offset_};
      return {inSlot_ + kShmSlotHeaderBytes + offset_, length_ - offset_};
    }
    if (mappedAt_) return {mappedAt_ + offset_, length_ - offset_};  // in place: zero copy
    // A lent region read by a consumer that wants it in memory (a reduction,
    // a forward): in pieces into a buffer of this side's that stays in cache.
    if (offset_ >= bouncedFrom_ + bounced_) {
      bounced_ = std::min(length_ - offset_, kBounceBytes);
      bounce_.resize(kBounceBytes);
      readLent(bounce_.data(), offset_, bounced_);
      bouncedFrom_ = offset_;
    }
    return {bounce_.data() + (offset_ - bouncedFrom_), bouncedFrom_ + bounced_ - offset_};
  }

  size_t tryRecvInto(uint8_t* dst, size_t n, bool streamingStores) override {
    if (!havePacket()) return 0;
    if (!lent_ || mappedAt_ || offset_ < bouncedFrom_ + bounced_) return Channel::tryRecvInto(dst, n, streamingStores);
    n = std::min(n, length_ - offset_);
    readLent(dst, offset_, n);
    consumeRecv(n);
    return n;
  }

  void consumeRecv(size_t n) override {
    offset_ += n;
    if (timed_ && peekedAt_) {
      readerNanos_ += opclock::steadyNs() - peekedAt_;
      peekedAt_ = 0;
    }
    if (offset_ >= length_) {
      if (timed_) recordStoreCost();
      // A lent region's release gives the sender its buffer back, and a
      // large packet's copy dwarfs the moves of the line: at once.
      const bool releaseNow = lent_ || length_ > kBatchedReleaseBytes;
      const size_t finished = length_;
      const bool nextWritten = writerAhead_ && !lent_;
      const bool small = smallIn_;
      offset_ = 0;
      length_ = kNoPacket;
      lent_ = shareable_ = false;
      mappedAt_ = nullptr;
      bouncedFrom_ = bounced_ = 0;
      if (++consumed_ - released_ >= releaseEvery_[small] || releaseNow) release();
      // Start fetching the next packet's line: a sender running ahead (a
      // stream of small broadcasts or reduces) has written it already, and
      // its transfer then overlaps this rank's work between packets. Where
      // it says it runs ahead, all of the packet's lines, as many as this
      // one's (a stream of equal calls): measured 2 ranks, 128-byte
      // broadcast 0.23 -> 0.10 us a call. Not otherwise: lines fetched
      // before the writer fills them are taken back from this side, and
      // pulled away again (2-rank 512-byte all-reduce 1.23x the time).
      if (nextWritten)
        prefetchForRead(inbox_->slotHeader(consumed_, small),
                        std::min(kShmSlotHeaderBytes + finished, kPrefetchedForWriteBytes));
      else
        __builtin_prefetch(inbox_->slotHeader(consumed_, small));
    }
  }

  // Called by a waiting rank for every link: nothing held back while it waits.
  bool progress() override {
    release();
    return lentUntil_ > peerConsumed_ && helpPeerRead();
  }

  // Reads a shareable lent region whole into dst, the sender writing the
  // chunks it takes from the back while this side reads from the front
  // (ShmSharedRead in shm_ring.h).
  size_t tryRecvShared(uint8_t* dst, size_t room) override {
    if (!havePacket() || !lent_ || mappedAt_ || !shareable_ || offset_ != 0 || length_ > room ||
        length_ < kSharedReadMinBytes)
      return 0;
    ShmSharedRead& s = inbox_->header()->sharedRead;
    const uint64_t chunks = (length_ + kSharedChunkBytes - 1) / kSharedChunkBytes;
    s.packet.store(consumed_, std::memory_order_relaxed);
    s.dst.store(reinterpret_cast<uint64_t>(dst), std::memory_order_relaxed);
    s.written.store(0, std::memory_order_relaxed);
    s.broken.store(0, std::memory_order_relaxed);
    s.cursor.store(sharedCursor(consumed_, 0, chunks), std::memory_order_release);
    uint64_t mine = 0;
    for (uint64_t c = s.cursor.load(std::memory_order_acquire);;) {
      const uint64_t front = sharedFront(c), end = sharedEnd(c);
      if (front >= end) break;
      if (!s.cursor.compare_exchange_weak(c, sharedCursor(consumed_, front + 1, end), std::memory_order_acq_rel))
        continue;
      const size_t at = size_t(front) * kSharedChunkBytes;
      readLent(dst + at, at, std::min(kSharedChunkBytes, length_ - at));
      ++mine;
      c = s.cursor.load(std::memory_order_acquire);
    }
    // Every chunk is taken: wait for the sender's to be written (it copies
    // the one it took, nothing more), for its death, or for the timeout (a
    // sender stopped in the middle of a chunk). This wait is inside the call,
    // where the waiter's polling does not reach: it reads the liveness line
    // itself, about once a millisecond, so that a sender killed holding a
    // chunk is an error at once (it was one only at the timeout).
    const uint64_t waitFrom = opclock::steadyNs();
    uint64_t nextLook = waitFrom + kLivenessLookNs;
    while (s.written.load(std::memory_order_acquire) < chunks - mine) {
      const uint64_t now = opclock::steadyNs();
      if (now >= nextLook) {
        readLivenessLine();
        nextLook = now + kLivenessLookNs;
      }
      if (live_.gone()) live_.throwIfGone();
      if (timeoutMs_ > 0 && now - waitFrom > uint64_t(timeoutMs_) * 1000000)
        fail(strataRemoteError, "rank %d took %llu chunks of a region it lent (shared read) and wrote %llu of "
             "them in %d ms (STRATA_TIMEOUT_MS)", live_.peer(), (unsigned long long)(chunks - mine),
             (unsigned long long)s.written.load(std::memory_order_relaxed), timeoutMs_);
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
    }
    if (s.broken.load(std::memory_order_acquire)) readLent(dst, 0, length_);  // a chunk it could not write
    const size_t n = length_;
    consumeRecv(n);
    return n;
  }

 private:
  static constexpr uint64_t kLivenessLookNs = 1000000;
  // Reads what the liveness line holds, if anything (EOF: the peer is gone;
  // an ABORT frame throws its cause).
  void readLivenessLine() {
    pollfd p{live_.fd(), POLLIN, 0};
    if (::poll(&p, 1, 0) > 0) live_.onReadable();
  }

  static constexpr size_t kNoPacket = ~size_t(0);
  static constexpr size_t kMaxLentBytes = size_t(1) << 30;
  static constexpr size_t kBounceBytes = 256 * 1024;
  // The most of the next slot commitSend takes ahead (larger packets take
  // long enough to copy that the transfer does not show).
  static constexpr size_t kPrefetchedForWriteBytes = 512;
  // The largest packet whose release may be held back (released_).
  static constexpr size_t kBatchedReleaseBytes = 2048;
  // How long a failed read of a lent region waits for the lender's ABORT.
  static constexpr int kAbortGraceMs = 200;

  // The packet just read was timed by its writer: its cost, the slower of
  // the two sides, joins the measurements of its way of storing, and the
  // writer is told when the cheaper way changes.
  void recordStoreCost() {
    const uint64_t readerNanos = readerNanos_;
    timed_ = false;
    if (timedWriterNanos_ & kFirstOfItsWay) return;  // a switch's cost, not a stream's
    const bool streamed = (timedWriterNanos_ & kStreamedPacket) != 0;
    const uint64_t writerNanos = timedWriterNanos_ & kWriterNanosMask;
    if (!storeChooser_.record(streamed, length_, std::max(readerNanos, writerNanos))) return;
    const bool stream = storeChooser_.prefersStreaming();
    inbox_->header()->writerShouldStream.store(stream ? 1 : 0, std::memory_order_relaxed);
    STRATA_INFO("shm link from rank %d: large packets now stored %s (measured %.0f ns per KiB cached, %.0f streaming)",
                live_.peer(), stream ? "streaming" : "cached", storeChooser_.cachedNsPerKiB(),
                storeChooser_.streamingNsPerKiB());
  }

  // Writes the chunks of a shared read (ShmSharedRead) that this side can
  // take from the back, while the peer reads from the front; true if it
  // wrote any. Only a region this side lent shareable and the peer has not
  // released: the peer names the packet, this side's record says where the
  // bytes lie and how many there are.
  bool helpPeerRead() {
    ShmSharedRead& s = outbox_->header()->sharedRead;
    bool wrote = false;
    for (uint64_t c = s.cursor.load(std::memory_order_acquire);;) {
      const uint64_t front = sharedFront(c), end = sharedEnd(c);
      if (front >= end) return wrote;
      const uint64_t packet = s.packet.load(std::memory_order_relaxed);  // written before the cursor; the tag checks it
      const LentRecord& lent = lentBySlot_[packet % outbox_->slots()];
      if (lent.packet != packet || !lent.shareable || packet < peerConsumed_ || packet >= produced_ ||
          sharedTag(packet) != c >> 48 || end * kSharedChunkBytes >= lent.bytes + kSharedChunkBytes)
        return wrote;  // not a region of ours (yet), or a malformed request
      if (!s.cursor.compare_exchange_weak(c, sharedCursor(packet, front, end - 1), std::memory_order_acq_rel))
        continue;
      const size_t at = size_t(end - 1) * kSharedChunkBytes;
      const size_t bytes = std::min(kSharedChunkBytes, size_t(lent.bytes) - at);
      const bool ok = writePeerMemory(peerProcess_, reinterpret_cast<const uint8_t*>(lent.address) + at,
                                      s.dst.load(std::memory_order_relaxed) + at, bytes);
      if (!ok) {
        // The peer reads them all itself then (or is gone: ESRCH), and this
        // link lends no more shareable regions.
        if (!sharingBroken_ && errno != ESRCH)
          STRATA_WARN("shm link to rank %d: cannot write its memory (%s); it reads shared regions alone",
                      live_.peer(), std::strerror(errno));
        sharingBroken_ = true;
        s.broken.store(1, std::memory_order_release);
      }
      s.written.fetch_add(1, std::memory_order_release);
      wrote = true;
      if (!ok) return wrote;
      c = s.cursor.load(std::memory_order_acquire);
    }
  }

  // Releases every packet consumed and not yet released (none: no store).
  void release() {
    if (released_ == consumed_) return;
    inbox_->header()->consumed.store(consumed_, std::memory_order_release);
    released_ = consumed_;
  }

  // Reads `n` bytes of the lent region from byte `at`. A lender that
  // found an error (a mismatch) sends its ABORT and exits, so the read can
  // fail before the frame is read: that cause is reported when it comes.
  void readLent(uint8_t* dst, size_t at, size_t n) {
    preferringPeerCause([&] { readPeerMemory(peerPid_, lentAddress_ + at, dst, n, live_.peer()); },
                        [&] { live_.throwAbortWithin(kAbortGraceMs); });
  }

  // Lends bytes of a strataMemAlloc region: one slot naming them.
  size_t lendMapped(MappedRef ref) {
    if (!slotFree(false)) return 0;
    ref.bytes = std::min<uint64_t>(ref.bytes, kMaxLentBytes);
    std::memcpy(outbox_->payload(produced_), &ref, sizeof ref);
    outbox_->slotHeader(produced_)->word.store(shmSlotWord(produced_, sizeof ref, kMappedRegion),
                                               std::memory_order_release);
    lentUntil_ = ++produced_;
    return size_t(ref.bytes);
  }

  // Whether the next slot of the peer's inbox may be written, in the small
  // lane or in the slots.
  bool slotFree(bool small) {
    const uint32_t window = outbox_->window(small);
    if (produced_ - peerConsumed_ < window) return true;
    // Looks full: only now read what the peer has released (its line).
    peerConsumed_ = outbox_->header()->consumed.load(std::memory_order_acquire);
    ahead_ = produced_ - peerConsumed_ >= window / 2;
    if (produced_ - peerConsumed_ < window) return true;
    release();  // the peer may be waiting for ours
    if (live_.gone()) live_.throwIfGone();
    return false;
  }

  // Whether the peer has said it can read this process's memory (it says so
  // once, at set-up, in its inbox's header).
  bool peerReadsUs() {
    if (!peerReadsUs_)
      peerReadsUs_ = outbox_->header()->readerReadsWriterMemory.load(std::memory_order_acquire) != 0;
    return peerReadsUs_;
  }

  // Whether a packet is there to read (sets length_); throws if none will come.
  bool havePacket() {
    if (length_ != kNoPacket || takePacket()) return true;
    release();  // nothing more to read now
    if (!live_.gone()) return false;
    // The peer may have published its last packet before closing: look once more.
    if (!takePacket()) live_.throwIfGone();
    return true;
  }

  // Whether packet consumed_ has been published, in the small lane or in
  // the slots; sets length_ if so. The lane of the packet before is looked
  // at first: a stream keeps to one lane, and the other's word is then
  // read only while this side waits.
  bool takePacket() {
    const uint64_t number = (consumed_ + 1) & 0xffffffffu;
    if (smallIn_) return takeSmallPacket(number) || takeSlotPacket(number);
    return takeSlotPacket(number) || takeSmallPacket(number);
  }

  // takePacket in the small lane (compact or not; never a lent region).
  bool takeSmallPacket(uint64_t number) {
    ShmSlotHeader* small = inbox_->slotHeader(consumed_, true);
    const uint64_t word = small->word.load(std::memory_order_acquire);
    if (word >> 32 != number) return false;
    const size_t length = size_t(word & kSlotLengthMask);
    if (length > kShmSmallSlotBytes || (word & (kLentRegion | kMappedRegion)))
      fail(strataRemoteError, "rank %d wrote a %zu-byte packet into a %zu-byte small shared-memory slot",
           live_.peer(), length, kShmSmallSlotBytes);
    writerAhead_ = (word & kWriterAhead) != 0;
    inSlot_ = reinterpret_cast<uint8_t*>(small);
    smallIn_ = true;
    length_ = length;
    return true;
  }

  // takePacket in the slots: plain, lent or mapped.
  bool takeSlotPacket(uint64_t number) {
    ShmSlotHeader* slot = inbox_->slotHeader(consumed_);
    const uint64_t word = slot->word.load(std::memory_order_acquire);
    if (word >> 32 != number) return false;
    inSlot_ = reinterpret_cast<uint8_t*>(slot);
    smallIn_ = false;
    size_t length = size_t(word & kSlotLengthMask);
    writerAhead_ = (word & kWriterAhead) != 0;
    if (length > inbox_->slotBytes())
      fail(strataRemoteError, "rank %d wrote a %zu-byte packet into a %zu-byte shared-memory slot", live_.peer(),
           length, inbox_->slotBytes());
    if (word & kLentRegion) {
      ShmLentRegion region;
      std::memcpy(&region, inbox_->payload(consumed_), sizeof region);
      if (length != sizeof region || region.bytes == 0 || region.bytes > kMaxLentBytes || !peerPid_)
        fail(strataRemoteError, "rank %d lent a region this rank cannot read (%llu bytes)", live_.peer(),
             (unsigned long long)region.bytes);
      lent_ = true;
      shareable_ = (word & kShareable) != 0;
      lentAddress_ = region.address;
      length = size_t(region.bytes);
    } else if (word & kMappedRegion) {
      MappedRef ref;
      std::memcpy(&ref, inbox_->payload(consumed_), sizeof ref);
      if (length != sizeof ref || ref.bytes == 0 || ref.bytes > kMaxLentBytes)
        fail(strataRemoteError, "rank %d lent strataMemAlloc memory in a malformed slot (%llu bytes)", live_.peer(),
             (unsigned long long)ref.bytes);
      mappedAt_ = peerRegions_.at(ref, live_.peer(), peerProcess_);
      lent_ = true;
      length = size_t(ref.bytes);
    } else if (length >= kStoreModeMinBytes) {
      if (slot->timedPacket == uint32_t(consumed_ + 1)) {
        timedWriterNanos_ = slot->writerNanos;
        timed_ = true;
        readerNanos_ = peekedAt_ = 0;
      }
    }
    length_ = length;
    return true;
  }

  std::unique_ptr<ShmSegment> inbox_, outbox_;
  const pid_t peerProcess_;    // the peer's pid
  const pid_t peerPid_;        // 0: this side cannot read the peer (never accepts lent regions)
  const SingleCopyThresholds lendFrom_;  // smallest packets sent as lent regions
  const size_t mappedFrom_;    // smallest packet of strataMemAlloc memory lent by name
  StoreModeWriter storeWriter_;  // how this side's large packets to the peer are stored
  bool lastStreamed_ = false;  // the last of them was stored streaming
  StoreModeChooser storeChooser_;  // what this side's inbox's large packets cost each way
  // The current packet is timed: the time this side spent reading it so far
  // (from each peek to the consume after it: its copy or reduction, not
  // what the rank did between), and when it last peeked (0: consumed since).
  bool timed_ = false;
  uint64_t readerNanos_ = 0, peekedAt_ = 0;
  uint32_t timedWriterNanos_ = 0;  // and its writer's copy time (| kStreamedPacket)
  PeerRegions peerRegions_;    // the peer's strataMemAlloc regions, as mapped here
  bool peerReadsUs_ = false;
  uint64_t produced_ = 0;      // packets written to the peer's inbox
  uint64_t peerConsumed_ = 0;  // packets the peer had released when last read
  bool ahead_ = false;         // then, at least half the ring was unread (kWriterAhead)
  bool writerAhead_ = false;   // the current packet's word had kWriterAhead
  uint64_t lentUntil_ = 0;     // packets up to the last lent region (its number + 1)
  // The regions lent in the peer's slots (by packet % slots): for shared reads.
  struct LentRecord {
    uint64_t packet = ~uint64_t(0);
    uint64_t address = 0, bytes = 0;
    bool shareable = false;
  };
  LentRecord lentBySlot_[kMaxShmSlots];
  bool sharingBroken_ = false;  // a write into the peer failed: no more shareable regions
  bool shareable_ = false;      // the current packet is a lent region its sender helps to read
  uint64_t consumed_ = 0;      // packets consumed from our inbox
  // Packets released to the peer (stored in our inbox's header): consumed_,
  // or fewer than releaseEvery_ behind it while this side goes on reading
  // packets of up to kBatchedReleaseBytes.
  // A release moves the header's line here, and the sender's next look at a
  // full ring moves it back: in a stream of tiny calls, twice per packet.
  // Releasing every releaseEvery_ packets instead measured a 2-rank 128-byte
  // reduce 0.32 -> 0.24 us a call. Whenever this side waits (no packet in,
  // no slot out, a waiting rank's progress()) it releases everything, so a
  // sender never waits on a release held back; while the reader is away,
  // the sender's ring holds at most releaseEvery_ - 1 packets fewer.
  uint64_t released_ = 0;
  // A quarter of the slots (at least 1: every packet), and of the small lane:
  // by the lane of the packet just consumed.
  const uint32_t releaseEvery_[2];
  const int timeoutMs_;          // STRATA_TIMEOUT_MS: a shared read's longest wait for the peer
  size_t length_ = kNoPacket;  // bytes of packet consumed_, once published
  bool compactOut_ = false;    // the packet acquireSend gave out is compact
  bool smallOut_ = false;      // and lies in the small lane
  uint8_t* inSlot_ = nullptr;  // the slot of packet consumed_, once published
  bool smallIn_ = false;       // which is in the small lane
  size_t offset_ = 0;          // bytes consumed of the current packet
  // The current packet is a lent region at lentAddress_ in the peer; bytes
  // [bouncedFrom_, bouncedFrom_ + bounced_) of it have been read into bounce_.
  bool lent_ = false;
  uint64_t lentAddress_ = 0;
  const uint8_t* mappedAt_ = nullptr;  // a lent packet in a peer's mapped region: its first byte
  size_t bouncedFrom_ = 0, bounced_ = 0;
  std::vector<uint8_t> bounce_;
};

class ShmPendingLink : public PendingLink {
 public:
  ShmPendingLink(std::unique_ptr<ShmSegment> inbox, std::string name, int peer, const Config* config)
      : inbox_(std::move(inbox)), name_(std::move(name)), peer_(peer), config_(config) {}
  ~ShmPendingLink() override {
    if (inbox_) shm_unlink(name_.c_str());
  }

  std::unique_ptr<Channel> finish(Fd socket, const SetupBlob& peerBlob) override {
    ShmSetup peer;
    if (!decodeSetup(peerBlob, &peer))
      fail(strataRemoteError, "rank %d sent an invalid shared-memory set-up", peer_);
    auto outbox = std::make_unique<ShmSegment>();
    outbox->open(peer.inboxName.c_str());
    // Both sides have mapped (the peer mapped ours before replying, or we
    // reply right after this): the names are no longer needed. Unlinking
    // twice is harmless; a crash leaks at most the names of links in setup.
    shm_unlink(peer.inboxName.c_str());
    // Single copy: this side reads the peer's memory if it may (tried on the
    // geometry line of the peer's inbox, which both map) and tells the peer so.
    std::string why;
    const size_t threshold = singleCopyThreshold(*config_, &why);
    SingleCopyThresholds lendFrom{threshold, threshold, threshold, threshold};
    if (threshold == kSingleCopyMeasured)
      lendFrom = singleCopyThresholdsFor(agreedSingleCopyCosts(singleCopyCosts(), peer.costs), &why);
    pid_t peerPid = 0;
    if (config_->shmSingleCopy) {
      std::string refused;
      const uint64_t geometry = offsetof(ShmRingHeader, slotBytes);
      if (canReadPeerMemory(pid_t(peer.pid), peer.inboxAddress + geometry,
                            static_cast<const uint8_t*>(outbox->base()) + geometry, 16, &refused)) {
        peerPid = pid_t(peer.pid);
        inbox_->header()->readerReadsWriterMemory.store(1, std::memory_order_release);
      } else {
        // The peer then keeps sending through the ring (it lends only to a
        // reader that said it can read it).
        why = "off: " + refused;
      }
    }
    logSingleCopy(why);
    // strataMemAlloc memory: lent from the single-copy size set, or from
    // 64 KiB (one memcpy saved outweighs waiting for the reader's release).
    const size_t mappedFrom = !config_->shmSingleCopy          ? kSingleCopyNever
                              : config_->shmSingleCopyBytes ? config_->shmSingleCopyBytes
                                                            : kSingleCopyMinBytes;
    setNonBlocking(socket.get());
    const StoreModeSetting storeMode = config_->shmStreaming < 0    ? StoreModeSetting::kAuto
                                       : config_->shmStreaming == 0 ? StoreModeSetting::kCached
                                                                    : StoreModeSetting::kStreaming;
    return std::make_unique<ShmChannel>(std::move(inbox_), std::move(outbox), std::move(socket), peer_,
                                        pid_t(peer.pid), peerPid, lendFrom, mappedFrom, storeMode,
                                        config_->timeoutMs);
  }

 private:
  std::unique_ptr<ShmSegment> inbox_;
  std::string name_;
  int peer_;
  const Config* config_;
};

}  // namespace

bool ShmTransport::usable(const LinkContext& ctx) const {
  return linkTransportFor(ctx) == LinkTransport::kShm;
}

std::unique_ptr<PendingLink> ShmTransport::begin(const LinkContext& ctx, SetupBlob* blob) const {
  static std::atomic<uint32_t> counter{0};
  std::string name = format("/strata-%d-%llx-%d-%d-%u", int(getpid()),
                            (unsigned long long)(ctx.commTag & 0xffffffffffull), ctx.rank,
                            ctx.peer, counter.fetch_add(1));
  size_t slotBytes = (ctx.config->shmSlotBytes + 63) & ~size_t(63);
  int slots = ctx.config->shmSlots > kMaxShmSlots ? kMaxShmSlots : ctx.config->shmSlots;
  auto inbox = std::make_unique<ShmSegment>();
  inbox->create(name.c_str(), slotBytes, slots);
  ShmSetup setup;
  setup.inboxName = name;
  setup.pid = uint64_t(getpid());
  setup.inboxAddress = reinterpret_cast<uint64_t>(inbox->base());
  std::string why;
  if (singleCopyThreshold(*ctx.config, &why) == kSingleCopyMeasured) {
    const SingleCopyCosts& mine = singleCopyCosts();  // measured here, at the process's first link
    if (mine.failure.empty()) setup.costs = mine;
  }
  *blob = encodeSetup(setup);
  return std::make_unique<ShmPendingLink>(std::move(inbox), name, ctx.peer, ctx.config);
}

}  // namespace strata
