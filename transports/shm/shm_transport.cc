#include "transports/shm/shm_transport.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "core/log.h"
#include "transports/liveness.h"
#include "transports/net/transport_choice.h"
#include "transports/shm/shm_ring.h"

namespace strata {

ShmSegment::~ShmSegment() {
  if (base_) munmap(base_, bytes_);
}

void ShmSegment::create(const char* name, size_t slotBytes, int slots) {
  bytes_ = kShmHeaderBytes + shmSlotStride(slotBytes) * size_t(slots);
  int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) fail(strataSystemError, "shm_open(%s) failed: %s", name, std::strerror(errno));
  if (ftruncate(fd, off_t(bytes_)) != 0) {
    int e = errno;
    ::close(fd);
    shm_unlink(name);
    fail(strataSystemError, "cannot size shared memory %s to %zu bytes: %s", name, bytes_,
         std::strerror(e));
  }
  base_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
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
  adoptGeometry(uint32_t(slots), slotBytes);
  for (int i = 0; i < slots; ++i) new (slotHeader(uint64_t(i))) ShmSlotHeader{{0}};
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
  base_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (base_ == MAP_FAILED) {
    base_ = nullptr;
    failErrno("mmap(peer shm inbox)");
  }
  ShmRingHeader* h = header();
  adoptGeometry(h->slots, h->slotBytes);
  if (slots_ < 2 || slots_ > kMaxShmSlots || slotBytes_ == 0 || slotBytes_ > (size_t(1) << 31) ||
      kShmHeaderBytes + stride_ * slots_ > bytes_)
    fail(strataSystemError, "the peer's shared memory %s has an invalid layout", name);
}

namespace {

class ShmChannel : public LivenessChannel {
 public:
  ShmChannel(std::unique_ptr<ShmSegment> inbox, std::unique_ptr<ShmSegment> outbox, Fd socket,
             int peer)
      : LivenessChannel(std::move(socket), peer), inbox_(std::move(inbox)), outbox_(std::move(outbox)) {}

  const char* transportName() const override { return "shm"; }

  Span acquireSend(size_t maxBytes) override {
    if (produced_ - peerConsumed_ >= outbox_->slots()) {
      // Looks full: only now read what the peer has released (its line).
      peerConsumed_ = outbox_->header()->consumed.load(std::memory_order_acquire);
      if (produced_ - peerConsumed_ >= outbox_->slots()) {
        if (live_.gone()) live_.throwIfGone();
        return {};
      }
    }
    size_t capacity = outbox_->slotBytes();
    return {outbox_->payload(produced_), maxBytes < capacity ? maxBytes : capacity};
  }

  void commitSend(size_t bytes) override {
    outbox_->slotHeader(produced_)->word.store(shmSlotWord(produced_, bytes), std::memory_order_release);
    ++produced_;
  }

  ConstSpan peekRecv() override {
    if (length_ == kNoPacket && !takePacket()) {
      if (!live_.gone()) return {};
      // The peer may have published its last packet before closing: look once more.
      if (!takePacket()) live_.throwIfGone();
    }
    return {inbox_->payload(consumed_) + offset_, length_ - offset_};
  }

  void consumeRecv(size_t n) override {
    offset_ += n;
    if (offset_ >= length_) {
      offset_ = 0;
      length_ = kNoPacket;
      inbox_->header()->consumed.store(++consumed_, std::memory_order_release);
    }
  }

  bool progress() override { return false; }

 private:
  static constexpr size_t kNoPacket = ~size_t(0);

  // Whether packet consumed_ has been published; sets length_ if so.
  bool takePacket() {
    uint64_t word = inbox_->slotHeader(consumed_)->word.load(std::memory_order_acquire);
    if (word >> 32 != ((consumed_ + 1) & 0xffffffffu)) return false;
    size_t length = size_t(word & 0xffffffffu);
    if (length > inbox_->slotBytes())
      fail(strataRemoteError, "rank %d wrote a %zu-byte packet into a %zu-byte shared-memory slot", live_.peer(),
           length, inbox_->slotBytes());
    length_ = length;
    return true;
  }

  std::unique_ptr<ShmSegment> inbox_, outbox_;
  uint64_t produced_ = 0;      // packets written to the peer's inbox
  uint64_t peerConsumed_ = 0;  // packets the peer had released when last read
  uint64_t consumed_ = 0;      // packets consumed from our inbox
  size_t length_ = kNoPacket;  // bytes of packet consumed_, once published
  size_t offset_ = 0;          // bytes consumed of the current packet
};

class ShmPendingLink : public PendingLink {
 public:
  ShmPendingLink(std::unique_ptr<ShmSegment> inbox, std::string name, int peer)
      : inbox_(std::move(inbox)), name_(std::move(name)), peer_(peer) {}
  ~ShmPendingLink() override {
    if (inbox_) shm_unlink(name_.c_str());
  }

  std::unique_ptr<Channel> finish(Fd socket, const SetupBlob& peerBlob) override {
    std::string peerName(peerBlob.begin(), peerBlob.end());
    if (peerName.empty() || peerName[0] != '/' || peerName.find('\0') != std::string::npos ||
        peerName.find('/', 1) != std::string::npos || peerName.size() > 255)
      fail(strataRemoteError, "rank %d sent an invalid shared-memory name", peer_);
    auto outbox = std::make_unique<ShmSegment>();
    outbox->open(peerName.c_str());
    // Both sides have mapped (the peer mapped ours before replying, or we
    // reply right after this): the names are no longer needed. Unlinking
    // twice is harmless; a crash leaks at most the names of links in setup.
    shm_unlink(peerName.c_str());
    setNonBlocking(socket.get());
    auto ch = std::make_unique<ShmChannel>(std::move(inbox_), std::move(outbox), std::move(socket), peer_);
    return ch;
  }

 private:
  std::unique_ptr<ShmSegment> inbox_;
  std::string name_;
  int peer_;
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
  blob->assign(name.begin(), name.end());
  return std::make_unique<ShmPendingLink>(std::move(inbox), name, ctx.peer);
}

}  // namespace strata
