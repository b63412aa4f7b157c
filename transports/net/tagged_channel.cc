#include "transports/net/tagged_channel.h"

#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <deque>

#include "core/error.h"
#include "transports/liveness.h"

namespace strata {

namespace {

constexpr uint32_t kSetupMagic = 0x5354544eu;  // "NTTS"
constexpr size_t kSetupHeaderBytes = 16;
constexpr int kCreditRecvs = 2;

struct AlignedFree {
  void operator()(uint8_t* p) const { std::free(p); }
};
using Memory = std::unique_ptr<uint8_t, AlignedFree>;

// Touched here, when the link is made, before any registration: otherwise
// the first packets through each slot pay its page faults (over ofi's tcp
// provider and ucx's tcp, 2 ranks, all-gather: the first eight calls of each
// new size took 3x the steady time), and the memory is known to be there.
Memory allocate(size_t bytes) {
  size_t rounded = (bytes + 4095) / 4096 * 4096;
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(4096, rounded));
  if (!p) fail(strataSystemError, "out of memory allocating %zu bytes of network buffers", bytes);
  std::memset(p, 0, rounded);
  return Memory(p);
}

}  // namespace

// One link's rings, credits and error, owned by the endpoint (see
// tagged_endpoint.h). Used by one thread at a time, like every Channel.
class TaggedLinkState {
 public:
  TaggedLinkState(TaggedEndpoint& ep, uint64_t peerHandle, int rank, int peer, size_t slotBytes,
                  uint32_t slots, size_t peerSlotBytes, uint32_t peerSlots)
      : ep_(ep), peerHandle_(peerHandle), rails_(ep.peerRails(peerHandle)), rank_(rank),
        peer_(peer), slotBytes_(slotBytes),
        slots_(slots), packetBytes_(std::min(slotBytes, peerSlotBytes)), window_(peerSlots),
        sendRing_(allocate(slotBytes * slots)), recvRing_(allocate(slotBytes * slots)),
        control_(allocate(8 * (1 + kCreditRecvs))), sendOps_(slots), recvOps_(slots),
        recvLength_(slots, 0), recvDone_(slots, false) {
    for (int r = 0; r < ep.rails(); ++r) {
      sendDesc_.push_back(ep.memoryDescriptor(r, sendRing_.get(), slotBytes * slots));
      recvDesc_.push_back(ep.memoryDescriptor(r, recvRing_.get(), slotBytes * slots));
      controlDesc_.push_back(ep.memoryDescriptor(r, control_.get(), 8 * (1 + kCreditRecvs)));
    }
    for (uint32_t i = 0; i < slots; ++i) {
      sendOps_[i].link = recvOps_[i].link = this;
      sendOps_[i].slot = recvOps_[i].slot = i;
      sendOps_[i].isSend = true;
    }
    creditSend_.link = this;
    creditSend_.isSend = creditSend_.isCredit = true;
    for (int i = 0; i < kCreditRecvs; ++i) {
      creditRecv_[i].link = this;
      creditRecv_[i].isCredit = true;
      creditRecv_[i].slot = uint32_t(i);
    }
  }

  // Posts the first window of receives and the credit receives.
  void start() {
    for (uint32_t i = 0; i < slots_; ++i) postRecv(i);
    for (int i = 0; i < kCreditRecvs; ++i) postCreditRecv(i);
    flushRecvPosts();
  }

  Span acquireSend(size_t maxBytes) {
    throwIfFailed();
    uint32_t slot = uint32_t(sendSeq_ % slots_);
    if (sendOps_[slot].inFlight || sendSeq_ >= peerConsumed_ + window_) return {};
    return {sendRing_.get() + size_t(slot) * slotBytes_, std::min(maxBytes, packetBytes_)};
  }

  void commitSend(size_t bytes) {
    uint32_t slot = uint32_t(sendSeq_ % slots_);
    TaggedOp& op = sendOps_[slot];
    op.inFlight = true;
    pendingSends_.push_back({slot, sendSeq_, bytes});
    ++sendSeq_;
    flushPosts();
  }

  ConstSpan peekRecv() {
    throwIfFailed();
    uint32_t slot = uint32_t(recvSeq_ % slots_);
    if (!recvDone_[slot]) {
      flushRecvPosts();
      ep_.progress();
      throwIfFailed();
      if (!recvDone_[slot]) return {};
    }
    return {recvRing_.get() + size_t(slot) * slotBytes_ + offset_, recvLength_[slot] - offset_};
  }

  void consumeRecv(size_t n) {
    uint32_t slot = uint32_t(recvSeq_ % slots_);
    offset_ += n;
    if (offset_ < recvLength_[slot]) return;
    offset_ = 0;
    recvDone_[slot] = false;
    ++recvSeq_;
    postRecv(slot);
    flushRecvPosts();
    if (recvSeq_ - creditReported_ >= std::max<uint64_t>(1, slots_ / 2)) sendCredit();
  }

  bool progress() {
    bool moved = ep_.progress();
    flushRecvPosts();
    flushPosts();
    if (!creditSend_.inFlight && recvSeq_ > creditReported_ && creditWanted_) sendCredit();
    return moved;
  }

  bool sendPending() const {
    for (const TaggedOp& op : sendOps_)
      if (op.inFlight) return true;
    return false;
  }

  void complete(TaggedOp* op, size_t bytes, bool cancelled, const std::string& error) {
    op->inFlight = false;
    op->request = nullptr;
    if (cancelled) return;
    // A credit that cannot be delivered is harmless: the peer only needs it
    // to send more, and a peer that is gone is reported by the liveness line
    // when (and only when) this rank still needs it.
    if (!error.empty() && op->isCredit && op->isSend) return;
    if (!error.empty()) {
      if (errorMessage_.empty())
        errorMessage_ = format("%s %s rank %d failed: %s", ep_.transportName(),
                               op->isSend ? "send to" : "receive from", peer_, error.c_str());
      return;
    }
    if (op->isCredit) {
      if (op->isSend) return;
      uint64_t value;
      std::memcpy(&value, creditRecvBuffer(int(op->slot)), 8);
      peerConsumed_ = std::max(peerConsumed_, value);
      postCreditRecv(int(op->slot));  // posted at the next flush (not from inside a completion)
      return;
    }
    if (!op->isSend) {
      recvLength_[op->slot] = bytes;
      recvDone_[op->slot] = true;
    }
  }

  void throwIfFailed() const {
    if (!errorMessage_.empty()) fail(strataRemoteError, "%s", errorMessage_.c_str());
  }

 private:
  struct PendingSend {
    uint32_t slot;
    uint64_t seq;
    size_t bytes;
  };
  struct PendingRecv {
    uint32_t slot;  // packet slot, or credit buffer index
    uint64_t seq;   // packet or credit message sequence number
    bool credit;
  };
  int railOf(uint64_t seq) const { return int(seq % uint64_t(rails_)); }
  uint8_t* creditSendBuffer() { return control_.get(); }
  uint8_t* creditRecvBuffer(int i) { return control_.get() + 8 * (1 + i); }

  // Posts the sends that are ready, in order, until the library pushes back.
  void flushPosts() {
    while (!pendingSends_.empty()) {
      const PendingSend& s = pendingSends_.front();
      int rail = railOf(s.seq);
      if (!ep_.postSend(peerHandle_, rail, sendRing_.get() + size_t(s.slot) * slotBytes_, s.bytes,
                        sendDesc_[size_t(rail)], makeTag(kTagData, rank_, s.seq),
                        &sendOps_[s.slot]))
        break;
      pendingSends_.pop_front();
    }
  }

  // Queues the receive of packet slot `slot` (its sequence number fixed now)
  // or of credit message `i`; flushRecvPosts() hands them to the library.
  // A library that pushes back (out of resources, or wedged by a dead peer)
  // is retried from the engine's progress calls, where the liveness line and
  // the timeout are checked, never in a loop here.
  void postRecv(uint32_t slot) {
    uint64_t seq = recvSeq_ + ((slot + slots_ - uint32_t(recvSeq_ % slots_)) % slots_);
    recvOps_[slot].inFlight = true;
    pendingRecvs_.push_back({slot, seq, false});
  }

  // Credit messages arrive in sequence; buffer i takes the next one due.
  void postCreditRecv(int i) {
    creditRecv_[i].inFlight = true;
    pendingRecvs_.push_back({uint32_t(i), creditRecvSeq_++, true});
  }

  void flushRecvPosts() {
    while (!pendingRecvs_.empty()) {
      const PendingRecv& r = pendingRecvs_.front();
      bool posted;
      if (r.credit) {
        posted = ep_.postRecv(peerHandle_, 0, creditRecvBuffer(int(r.slot)), 8, controlDesc_[0],
                              makeTag(kTagCredit, peer_, r.seq), &creditRecv_[r.slot]);
      } else {
        int rail = railOf(r.seq);
        posted = ep_.postRecv(peerHandle_, rail, recvRing_.get() + size_t(r.slot) * slotBytes_,
                              slotBytes_, recvDesc_[size_t(rail)], makeTag(kTagData, peer_, r.seq),
                              &recvOps_[r.slot]);
      }
      if (!posted) break;
      pendingRecvs_.pop_front();
    }
  }

  // Tells the peer how many packets this side has consumed (one message in
  // flight at a time; a later value supersedes an unsent one).
  void sendCredit() {
    if (creditSend_.inFlight) {
      creditWanted_ = true;
      return;
    }
    uint64_t value = recvSeq_;
    std::memcpy(creditSendBuffer(), &value, 8);
    creditSend_.inFlight = true;
    if (!ep_.postSend(peerHandle_, 0, creditSendBuffer(), 8, controlDesc_[0],
                      makeTag(kTagCredit, rank_, creditSendSeq_), &creditSend_)) {
      creditSend_.inFlight = false;
      creditWanted_ = true;
      return;
    }
    ++creditSendSeq_;
    creditWanted_ = false;
    creditReported_ = value;
  }

  TaggedEndpoint& ep_;
  uint64_t peerHandle_;
  int rails_;  // rails both sides have: packet s goes on rail s mod rails_
  int rank_, peer_;
  size_t slotBytes_;
  uint32_t slots_;
  size_t packetBytes_;
  uint64_t window_;
  Memory sendRing_, recvRing_, control_;
  std::vector<void*> sendDesc_, recvDesc_, controlDesc_;
  std::vector<TaggedOp> sendOps_, recvOps_;
  TaggedOp creditSend_, creditRecv_[kCreditRecvs];
  std::vector<size_t> recvLength_;
  std::vector<bool> recvDone_;
  std::deque<PendingSend> pendingSends_;
  std::deque<PendingRecv> pendingRecvs_;  // receives the library has not taken yet
  uint64_t sendSeq_ = 0;        // packets committed
  uint64_t peerConsumed_ = 0;   // packets the peer reported consumed
  uint64_t recvSeq_ = 0;        // packets consumed here
  uint64_t creditReported_ = 0; // last consumption reported to the peer
  uint64_t creditSendSeq_ = 0;  // credit messages sent
  uint64_t creditRecvSeq_ = 0;  // credit messages whose receive is queued or posted
  bool creditWanted_ = false;
  size_t offset_ = 0;           // bytes consumed of the current packet
  std::string errorMessage_;
};

TaggedEndpoint::TaggedEndpoint() = default;
TaggedEndpoint::~TaggedEndpoint() = default;

TaggedLinkState* TaggedEndpoint::adopt(std::unique_ptr<TaggedLinkState> link) {
  links_.push_back(std::move(link));
  return links_.back().get();
}

void TaggedEndpoint::releaseLinks() { links_.clear(); }

void TaggedEndpoint::abandonLinks() {
  for (auto& link : links_) (void)link.release();
  links_.clear();
}

void completeTaggedOp(TaggedOp* op, size_t bytes, bool cancelled, const std::string& error) {
  op->link->complete(op, bytes, cancelled, error);
}

SetupBlob encodeSetup(const TaggedSetup& s) {
  SetupBlob b(kSetupHeaderBytes + s.address.size());
  uint32_t len = uint32_t(s.address.size());
  std::memcpy(b.data(), &kSetupMagic, 4);
  std::memcpy(b.data() + 4, &s.slotBytes, 4);
  std::memcpy(b.data() + 8, &s.slots, 4);
  std::memcpy(b.data() + 12, &len, 4);
  if (len) std::memcpy(b.data() + kSetupHeaderBytes, s.address.data(), len);
  return b;
}

TaggedSetup decodeSetup(const SetupBlob& b, int peer, const char* transport) {
  TaggedSetup s;
  uint32_t magic = 0, len = 0;
  if (b.size() >= kSetupHeaderBytes) {
    std::memcpy(&magic, b.data(), 4);
    std::memcpy(&s.slotBytes, b.data() + 4, 4);
    std::memcpy(&s.slots, b.data() + 8, 4);
    std::memcpy(&len, b.data() + 12, 4);
  }
  if (magic != kSetupMagic || b.size() != kSetupHeaderBytes + len || s.slots < 2 ||
      s.slots > 4096 || s.slotBytes < 4096 || s.slotBytes > (256u << 20))
    fail(strataRemoteError, "rank %d sent an invalid %s set-up message (%zu bytes)", peer,
         transport, b.size());
  s.address.assign(b.begin() + long(kSetupHeaderBytes), b.end());
  return s;
}

namespace {

class TaggedChannel : public LivenessChannel {
 public:
  TaggedChannel(std::shared_ptr<TaggedEndpoint> ep, TaggedLinkState* link, Fd socket, int peer)
      : LivenessChannel(std::move(socket), peer), ep_(std::move(ep)), link_(link) {}

  const char* transportName() const override { return ep_->transportName(); }

  Span acquireSend(size_t maxBytes) override {
    Span s = reportingPeerCause([&] { return link_->acquireSend(maxBytes); });
    if (s.size == 0 && live_.gone()) live_.throwIfGone();
    return s;
  }
  void commitSend(size_t bytes) override { link_->commitSend(bytes); }
  ConstSpan peekRecv() override {
    ConstSpan s = reportingPeerCause([&] { return link_->peekRecv(); });
    if (s.size > 0) {
      emptySinceClose_ = {};
      return s;
    }
    if (!live_.gone()) return s;
    // The peer may have sent its last packet before it closed: look once
    // more. A peer that said GOODBYE destroyed its communicator after its
    // last operation, and what it sent may still be on its way: its packets
    // travel on the library's own connections, which a busy or shaped
    // network can deliver after the liveness line's close (the likely cause
    // of a CI failure on the namespace clusters, UCX over TCP: a rank whose
    // peer finished an all-to-all 4 ms early and exited called it gone in
    // the middle). Then keep receiving while packets still come, and call it
    // gone once none has for kAfterCloseGraceMs. A peer that closed without
    // GOODBYE crashed or was killed: gone now.
    s = reportingPeerCause([&] { return link_->peekRecv(); });
    if (s.size > 0) return s;
    if (!live_.saidGoodbye()) live_.throwIfGone();
    const auto now = std::chrono::steady_clock::now();
    if (emptySinceClose_ == std::chrono::steady_clock::time_point{}) emptySinceClose_ = now;
    else if (now - emptySinceClose_ > std::chrono::milliseconds(kAfterCloseGraceMs)) live_.throwIfGone();
    return s;
  }
  void consumeRecv(size_t n) override { link_->consumeRecv(n); }
  bool progress() override { return link_->progress(); }
  bool sendPending() const override { return link_->sendPending(); }

 private:
  // How long a failed transfer waits for the peer's own word on why.
  static constexpr int kCauseGraceMs = 200;
  // How long after the peer's exit a receive waits for packets still on
  // their way, counted from when the link last had none (reset by each one).
  static constexpr int kAfterCloseGraceMs = 1000;
  std::chrono::steady_clock::time_point emptySinceClose_{};

  // Runs a link call; a provider error it throws is replaced by the cause the
  // peer's liveness line gives (its ABORT, or its exit), when one comes.
  template <typename Call>
  auto reportingPeerCause(Call call) -> decltype(call()) {
    return preferringPeerCause(call, [&] { live_.throwCauseWithin(kCauseGraceMs); });
  }

  std::shared_ptr<TaggedEndpoint> ep_;
  TaggedLinkState* link_;
};


class TaggedPendingLink : public PendingLink {
 public:
  TaggedPendingLink(std::shared_ptr<TaggedEndpoint> ep, int rank, int peer, size_t slotBytes,
                    uint32_t slots)
      : ep_(std::move(ep)), rank_(rank), peer_(peer), slotBytes_(slotBytes), slots_(slots) {}

  std::unique_ptr<Channel> finish(Fd socket, const SetupBlob& peerBlob) override {
    TaggedSetup theirs = decodeSetup(peerBlob, peer_, ep_->transportName());
    uint64_t handle = ep_->addPeer(theirs.address, peer_);
    TaggedLinkState* link = ep_->adopt(std::make_unique<TaggedLinkState>(
        *ep_, handle, rank_, peer_, slotBytes_, slots_, theirs.slotBytes, theirs.slots));
    link->start();
    setNonBlocking(socket.get());
    return std::make_unique<TaggedChannel>(ep_, link, std::move(socket), peer_);
  }

 private:
  std::shared_ptr<TaggedEndpoint> ep_;
  int rank_, peer_;
  size_t slotBytes_;
  uint32_t slots_;
};

}  // namespace

std::unique_ptr<PendingLink> beginTaggedLink(std::shared_ptr<TaggedEndpoint> endpoint,
                                             const LinkContext& ctx, SetupBlob* blob) {
  TaggedSetup mine;
  mine.slotBytes = uint32_t(ctx.config->netSlotBytes);
  mine.slots = uint32_t(ctx.config->netSlots);
  mine.address = endpoint->address();
  *blob = encodeSetup(mine);
  return std::make_unique<TaggedPendingLink>(std::move(endpoint), ctx.rank, ctx.peer,
                                             mine.slotBytes, mine.slots);
}

}  // namespace strata
