// Shared pieces of the transport layer: the default trySend, frame codecs and
// the registry of transports.
#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "kernels/cpu/streaming_copy.h"
#include "transports/net/transport_choice.h"
#include "transports/shm/shm_transport.h"
#include "transports/tcp/tcp_transport.h"
#include "transports/transport.h"
#ifdef STRATA_HAVE_OFI
#include "transports/ofi/ofi_transport.h"
#endif
#ifdef STRATA_HAVE_UCX
#include "transports/ucx/ucx_transport.h"
#endif

namespace strata {

size_t Channel::trySend(const void* src, size_t n) {
  Span s = acquireSend(n);
  if (s.size == 0) return 0;
  std::memcpy(s.data, src, s.size);
  commitSend(s.size);
  return s.size;
}

size_t Channel::trySendCopying(const void* src, size_t n, void* streamedTo) {
  const size_t sent = trySend(src, n);
  if (sent) kernels::streamingCopy(streamedTo, src, sent);
  return sent;
}

size_t Channel::trySendPieces(const ConstSpan*, size_t) {
  fail(strataInternalError, "%s links do not send from pieces (sendsFromPieces)", transportName());
}

size_t Channel::tryRecvInto(uint8_t* dst, size_t n, bool streamingStores) {
  ConstSpan s = peekRecv();
  n = std::min(n, s.size);
  if (n == 0) return 0;
  if (streamingStores) kernels::streamingCopy(dst, s.data, n);
  else std::memcpy(dst, s.data, n);
  consumeRecv(n);
  return n;
}

void encodeFrameHeader(FrameType type, uint32_t length, uint8_t out[kFrameHeaderBytes]) {
  uint32_t t = uint32_t(type);
  std::memcpy(out, &t, 4);
  std::memcpy(out + 4, &length, 4);
}

std::string encodeAbortFrame(strataResult_t code, const std::string& message) {
  std::string text = message.substr(0, kMaxAbortBytes - 4);
  uint32_t len = uint32_t(4 + text.size());
  std::string frame(kFrameHeaderBytes + len, '\0');
  encodeFrameHeader(FrameType::kAbort, len, reinterpret_cast<uint8_t*>(frame.data()));
  uint32_t c = uint32_t(code);
  std::memcpy(&frame[kFrameHeaderBytes], &c, 4);
  std::memcpy(&frame[kFrameHeaderBytes + 4], text.data(), text.size());
  return frame;
}

int64_t decodeSetupBlobLength(const uint8_t in[kBlobLengthBytes]) {
  uint32_t len;
  std::memcpy(&len, in, 4);
  return len > kMaxSetupBlobBytes ? -1 : int64_t(len);
}

std::string encodeGoodbyeFrame() {
  uint8_t header[kFrameHeaderBytes];
  encodeFrameHeader(FrameType::kGoodbye, 0, header);
  return std::string(reinterpret_cast<const char*>(header), kFrameHeaderBytes);
}

std::string encodeArrivedFrame(uint64_t seq, uint8_t coll) {
  std::string frame(kFrameHeaderBytes + kArrivedBytes, '\0');
  encodeFrameHeader(FrameType::kArrived, kArrivedBytes, reinterpret_cast<uint8_t*>(frame.data()));
  std::memcpy(&frame[kFrameHeaderBytes], &seq, 8);
  frame[kFrameHeaderBytes + 8] = char(coll);
  return frame;
}

bool decodeArrivedPayload(const uint8_t* p, size_t n, uint64_t* seq) {
  if (n != kArrivedBytes) return false;
  std::memcpy(seq, p, 8);
  return true;
}

bool decodeAbortPayload(const uint8_t* p, size_t n, strataResult_t* code, std::string* message) {
  if (n < 4 || n > kMaxAbortBytes) return false;
  uint32_t c;
  std::memcpy(&c, p, 4);
  if (c == 0 || c >= strataNumResults) return false;
  *code = strataResult_t(c);
  message->assign(reinterpret_cast<const char*>(p + 4), n - 4);
  return true;
}

namespace {

// Stands in for a transport this build lacks, so that transport ids are the
// same in every build (checkTransportConfig refuses to select it).
class MissingTransport : public Transport {
 public:
  explicit MissingTransport(const char* name) : name_(name) {}
  const char* name() const override { return name_; }
  bool usable(const LinkContext&) const override { return false; }
  std::unique_ptr<PendingLink> begin(const LinkContext&, SetupBlob*) const override {
    fail(strataInternalError, "transport %s is not built in", name_);
  }

 private:
  const char* name_;
};

// Indexed by LinkTransport: the id a link's Hello carries.
struct Registry {
  ShmTransport shm;
#ifdef STRATA_HAVE_OFI
  OfiTransport ofi;
#else
  MissingTransport ofi{"ofi"};
#endif
#ifdef STRATA_HAVE_UCX
  UcxTransport ucx;
#else
  MissingTransport ucx{"ucx"};
#endif
  TcpTransport tcp;
  const Transport* ranked[4] = {&shm, &ofi, &ucx, &tcp};
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

uint32_t transportCount() { return 4; }

const Transport& transportAt(uint32_t id) { return *registry().ranked[id]; }

uint32_t chooseTransport(const LinkContext& ctx) {
  uint32_t id = uint32_t(linkTransportFor(ctx));
  if (!registry().ranked[id]->usable(ctx))
    fail(strataInvalidUsage, "transport %s cannot reach rank %d from rank %d (not built in)",
         registry().ranked[id]->name(), ctx.peer, ctx.rank);
  return id;
}

}  // namespace strata
