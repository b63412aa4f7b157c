// The seam between algorithms and bytes. A Channel is an ordered byte stream
// to one peer in each direction, seen through four calls the executor needs:
//   acquireSend/commitSend  write the next packet straight into transport
//                           memory (the peer's shm slot, the TCP staging area)
//                           so a reduction can produce its output there;
//   peekRecv/consumeRecv    read received bytes where they landed, so a
//                           reduction can consume them without a copy.
// Packets are never merged: a peek returns bytes of one packet only, and
// a packet the executor sends is a whole number of elements.
//
// Every Channel also owns the TCP socket the two ranks handshook on. It is the
// liveness line: EOF means the peer process is gone, and an ABORT frame on it
// carries the peer's error (code + sentence) so that every rank reports the
// root cause, not just "connection lost". A gone peer is an error only when
// this rank still needs it (data to read, space to write).
//
// A Transport makes Channels. Transports are picked per peer pair at run time
// (transport_choice.h): shm on one host, the network transport (tcp, ofi or
// ucx) between hosts, or one forced for every link. Lock order: none; a Channel is used by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/socket.h"
#include "bootstrap/wire.h"
#include "core/config.h"
#include "core/error.h"

namespace strata {

struct Span {
  uint8_t* data = nullptr;
  size_t size = 0;
};
struct ConstSpan {
  const uint8_t* data = nullptr;
  size_t size = 0;
};

// What a send's lending (Channel::trySendStable) would save against the
// copy path (Flow::lendingSavesOneCopy, Flow::lendingShared).
enum class LendSaving {
  kTwoCopies,  // both ranks also receive plain bytes: the ring's two copies
  kTwoCopiesStreamed,  // the same into outputs beyond the cache: the ring's copy out streams
  kOneCopy,    // the sender is idle meanwhile, or the receiver reduces
  kOneCopyShared,  // the sender is idle and the receiver copies plain bytes: both may copy
};

// No packet smaller than this is read shared (Channel::tryRecvShared).
constexpr size_t kSharedReadMinBytes = 256 * 1024;

class Channel {
 public:
  virtual ~Channel() = default;
  virtual const char* transportName() const = 0;

  // Contiguous space for the next packet, at most maxBytes; empty when full.
  virtual Span acquireSend(size_t maxBytes) = 0;
  // Publishes `bytes` written into the last acquired span as one packet.
  virtual void commitSend(size_t bytes) = 0;
  // Sends up to n bytes from src (continuing the same packet across calls
  // where the transport streams); returns how many were taken.
  virtual size_t trySend(const void* src, size_t n);
  // Whether trySendPieces writes a packet straight from the caller's pieces
  // (TCP: one sendmsg over them, without gathering them into staging first).
  virtual bool sendsFromPieces() const { return false; }
  // One packet of the bytes of `count` pieces (at most kMaxSendPieces),
  // in order, continuing across calls as trySend does: a call after a
  // partial one passes the pieces of exactly the bytes not yet taken.
  // Returns how many bytes were taken. Only where sendsFromPieces().
  static constexpr size_t kMaxSendPieces = 64;
  virtual size_t trySendPieces(const ConstSpan* pieces, size_t count);
  // trySend for bytes the caller leaves unchanged until sendBuffersLent() is
  // false: a transport may lend them instead of copying (shm single copy).
  // A lending transport may take up to `lendable` (>= n) bytes from src in
  // one lent region; a copying one takes at most n, as trySend does.
  // `saves`: what lending would save the copy path (LendSaving).
  virtual size_t trySendStable(const void* src, size_t n, size_t lendable, LendSaving saves) {
    (void)lendable;
    (void)saves;
    return trySend(src, n);
  }
  // trySend, and the bytes it took copied to `streamedTo` as well with
  // streaming stores (fenced): a rank sending its own block on while copying
  // it into an output beyond the cache. A link that copies them into its own
  // memory (the shm ring) writes both from one read of src
  // (kernels/cpu/dual_copy.h).
  virtual size_t trySendCopying(const void* src, size_t n, void* streamedTo);
  // Whether trySendStable would lend n bytes at src at once (not copy them):
  // the sender then keeps them out of a copied packet (the descriptor's).
  virtual bool wouldLend(const void* src, size_t n, LendSaving saves) { return false; }
  // Whether bytes passed to trySendStable are still to be read by the peer.
  // Throws if the peer is gone before reading them.
  virtual bool sendBuffersLent() { return false; }

  // Received bytes of the current packet not yet consumed; empty if none yet.
  // Throws strataRemoteError (or the peer's abort code) if none will come.
  virtual ConstSpan peekRecv() = 0;
  virtual void consumeRecv(size_t n) = 0;
  // Copies up to n received bytes of the current packet to dst and consumes
  // them; returns how many (0: none yet). A transport may read them straight
  // from where the peer lent them (shm single copy), with no copy in between.
  // `streamingStores`: bytes it copies go to dst with streaming stores
  // (kernels/cpu/streaming_copy.h; an output larger than the cache).
  virtual size_t tryRecvInto(uint8_t* dst, size_t n, bool streamingStores);
  // Reads the whole current packet into dst (which has room for `room`
  // bytes) where the link can have the sender share the copy (shm: a lent
  // region the sender helps to read, single_copy.h); returns its bytes, or 0
  // where it cannot (then tryRecvInto). Callers ask only for plain bytes of
  // at least kSharedReadMinBytes' worth of room.
  virtual size_t tryRecvShared(uint8_t* dst, size_t room) {
    (void)dst;
    (void)room;
    return 0;
  }

  // Pushes buffered I/O. Returns true if bytes moved.
  virtual bool progress() = 0;
  // Whether committed bytes still wait in this side's buffers (TCP staging).
  virtual bool sendPending() const { return false; }
  // The sockets to poll for readability (data, ABORT frames, EOF): writes up
  // to `max` descriptors to `out` and returns how many.
  virtual size_t pollFds(int* out, size_t max) const = 0;
  // Called when one of them is readable: absorbs what arrived; throws on ABORT.
  virtual void onReadable() = 0;
  // Best effort: tells the peer this rank failed with `code` and `message`,
  // then closes the liveness socket. Never throws.
  virtual void sendAbort(strataResult_t code, const std::string& message) noexcept = 0;
  // Best effort: tells the peer this rank is inside operation `seq` (an
  // ARRIVED frame from encodeArrivedFrame). Never throws.
  virtual void announceArrival(const std::string& frame) noexcept {}
  // Best effort: tells the peer this rank is destroying its communicator
  // after its last operation (a GOODBYE frame). Never throws.
  virtual void sayGoodbye() noexcept {}
  // The highest operation the peer announced (0: none).
  virtual uint64_t announcedSeq() const { return 0; }
};

// What a transport knows about the link it is building.
struct LinkContext {
  int rank = 0, peer = 0, nranks = 0;
  bool initiator = false;  // this side called (the lower rank); the other answered
  RankInfo local, remote;
  uint64_t commTag = 0;  // distinguishes communicators in resource names
  const Config* config = nullptr;
};

// What one side of a link tells the other at set-up (shm segment names, TCP
// side ports, fabric / UCX worker addresses). Sent after the Hello with its
// length; anything longer than kMaxSetupBlobBytes is refused.
using SetupBlob = std::vector<uint8_t>;
constexpr size_t kMaxSetupBlobBytes = 16384;
constexpr size_t kBlobLengthBytes = 4;
// The blob length that follows a Hello; -1 if it exceeds kMaxSetupBlobBytes.
int64_t decodeSetupBlobLength(const uint8_t in[kBlobLengthBytes]);

// A link under construction: local resources exist, the peer's are unknown.
class PendingLink {
 public:
  virtual ~PendingLink() = default;
  // Completes the link with the peer's setup blob; `socket` is handshaken.
  virtual std::unique_ptr<Channel> finish(Fd socket, const SetupBlob& peerBlob) = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;
  virtual bool usable(const LinkContext& ctx) const = 0;
  // Allocates this side's resources and fills the blob the peer needs.
  virtual std::unique_ptr<PendingLink> begin(const LinkContext& ctx, SetupBlob* blob) const = 0;
};

// The registry: every transport by id (shm, ofi, ucx, tcp). chooseTransport
// returns the id serving a link (transports/net/transport_choice.h; the same
// on both sides, since both see the same rank table and settings).
uint32_t transportCount();
const Transport& transportAt(uint32_t id);
uint32_t chooseTransport(const LinkContext& ctx);

// Frames on the liveness / TCP socket: 8-byte header then payload.
// ARRIVED (16-byte payload: seq, collective) is sent by a rank that has waited
// long inside an operation, so that its peers can tell it from one that never
// arrived (see exec/waiter.h). GOODBYE (no payload) is sent by a rank that
// destroys its communicator without a failure: its close is then an exit
// after its last sends, not a crash (see LivenessSocket::saidGoodbye).
enum class FrameType : uint32_t { kData = 1, kAbort = 2, kArrived = 3, kGoodbye = 4 };
std::string encodeGoodbyeFrame();
constexpr uint32_t kArrivedBytes = 16;
std::string encodeArrivedFrame(uint64_t seq, uint8_t coll);
// Parses an ARRIVED payload; false if malformed.
bool decodeArrivedPayload(const uint8_t* p, size_t n, uint64_t* seq);
constexpr size_t kFrameHeaderBytes = 8;
constexpr uint32_t kMaxAbortBytes = 4096;
void encodeFrameHeader(FrameType type, uint32_t length, uint8_t out[kFrameHeaderBytes]);
// Builds a whole ABORT frame (header, code, sentence truncated to fit).
std::string encodeAbortFrame(strataResult_t code, const std::string& message);
// Parses an ABORT frame's payload (after the header); false if malformed.
bool decodeAbortPayload(const uint8_t* p, size_t n, strataResult_t* code, std::string* message);

// Runs a channel's call; when it throws a transport error (not a peer's
// ABORT), `throwPeerCause` gets the chance to throw the cause the peer sent
// instead. An aborting peer sends its ABORT (which says why: a dead rank, a
// mismatch) and then tears its end down, and the teardown can fail this
// rank's transfer first; the ABORT is what every survivor should report.
template <typename Call, typename ThrowPeerCause>
auto preferringPeerCause(Call call, ThrowPeerCause throwPeerCause) -> decltype(call()) {
  try {
    return call();
  } catch (const PeerAbort&) {
    throw;
  } catch (const Error&) {
    throwPeerCause();
    throw;
  }
}

}  // namespace strata
