#include "transports/tcp/tcp_transport.h"

#include <sys/socket.h>

#include <cstring>

#include "core/error.h"
#include "core/log.h"
#include "transports/net/transport_choice.h"
#include "transports/tcp/tcp_channel.h"

namespace strata {

void encodeExtra(const ExtraSockets& e, SetupBlob* blob) {
  blob->assign(kExtraBlobBytes, 0);
  std::memcpy(blob->data(), &e.port, 2);
  std::memcpy(blob->data() + 2, &e.count, 2);
  std::memcpy(blob->data() + 8, &e.token, 8);
}

ExtraSockets decodeExtra(const SetupBlob& blob, int peer) {
  if (blob.size() != kExtraBlobBytes)
    fail(strataRemoteError, "rank %d sent a TCP set-up message of %zu bytes, expected %zu", peer,
         blob.size(), kExtraBlobBytes);
  ExtraSockets e;
  std::memcpy(&e.port, blob.data(), 2);
  std::memcpy(&e.count, blob.data() + 2, 2);
  std::memcpy(&e.token, blob.data() + 8, 8);
  return e;
}

namespace {


constexpr int kExtraTimeoutMs = 10000;

// Calling side: owns a side listener until the answering side has connected
// its extra sockets (it does so before it replies, so they are waiting).
class CallerLink : public PendingLink {
 public:
  CallerLink(int peer, size_t bufferBytes, Fd listener, ExtraSockets extra)
      : peer_(peer), bufferBytes_(bufferBytes), listener_(std::move(listener)), extra_(extra) {}

  std::unique_ptr<Channel> finish(Fd socket, const SetupBlob&) override {
    std::vector<Fd> sockets;
    sockets.push_back(std::move(socket));
    std::vector<Fd> extra(extra_.count);
    int64_t deadline = nowMs() + kExtraTimeoutMs;
    size_t have = 0;
    while (have < extra_.count) {
      Fd fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!fd) {
        if (nowMs() > deadline) fail(strataTimeout, "rank %d did not open its extra TCP connections", peer_);
        continue;
      }
      uint8_t hello[10];
      try {
        recvAll(fd.get(), hello, sizeof(hello), nowMs() + 2000, "reading an extra connection's token");
      } catch (const Error& e) {
        STRATA_WARN("dropped an extra TCP connection: %s", e.what());
        continue;
      }
      uint64_t token;
      uint16_t index;
      std::memcpy(&token, hello, 8);
      std::memcpy(&index, hello + 8, 2);
      if (token != extra_.token || index >= extra_.count || extra[index]) {
        STRATA_WARN("dropped a connection to a TCP side port from %s: wrong token",
                    peerAddr(fd.get()).str().c_str());
        continue;
      }
      extra[index] = std::move(fd);
      ++have;
    }
    for (Fd& fd : extra) sockets.push_back(std::move(fd));
    return std::make_unique<TcpChannel>(std::move(sockets), peer_, bufferBytes_);
  }

 private:
  int peer_;
  size_t bufferBytes_;
  Fd listener_;
  ExtraSockets extra_;
};

// Answering side: connects the extra sockets to the caller's side listener.
class AnswerLink : public PendingLink {
 public:
  AnswerLink(int peer, size_t bufferBytes) : peer_(peer), bufferBytes_(bufferBytes) {}

  std::unique_ptr<Channel> finish(Fd socket, const SetupBlob& peerBlob) override {
    ExtraSockets extra = decodeExtra(peerBlob, peer_);
    if (extra.count > 64) fail(strataRemoteError, "rank %d asked for %u TCP sockets", peer_, unsigned(extra.count));
    SockAddr side = peerAddr(socket.get());
    side.port = extra.port;
    std::vector<Fd> sockets;
    sockets.push_back(std::move(socket));
    for (uint16_t i = 0; i < extra.count; ++i) {
      Fd fd = connectTo(side, nowMs() + kExtraTimeoutMs);
      uint8_t hello[10];
      std::memcpy(hello, &extra.token, 8);
      std::memcpy(hello + 8, &i, 2);
      sendAll(fd.get(), hello, sizeof(hello), nowMs() + kExtraTimeoutMs, "opening an extra TCP connection");
      sockets.push_back(std::move(fd));
    }
    return std::make_unique<TcpChannel>(std::move(sockets), peer_, bufferBytes_);
  }

 private:
  int peer_;
  size_t bufferBytes_;
};

}  // namespace

bool TcpTransport::usable(const LinkContext& ctx) const {
  return linkTransportFor(ctx) == LinkTransport::kTcp;
}

std::unique_ptr<PendingLink> TcpTransport::begin(const LinkContext& ctx, SetupBlob* blob) const {
  blob->clear();
  if (!ctx.initiator) return std::make_unique<AnswerLink>(ctx.peer, ctx.config->tcpBufferBytes);
  ExtraSockets extra;
  extra.count = uint16_t(ctx.config->tcpSockets - 1);
  Fd listener;
  if (extra.count > 0) {
    listener = listenOn(SockAddr{});
    extra.port = localAddr(listener.get()).port;
    Secret random = randomSecret();
    std::memcpy(&extra.token, random.data(), 8);
  }
  encodeExtra(extra, blob);
  return std::make_unique<CallerLink>(ctx.peer, ctx.config->tcpBufferBytes, std::move(listener), extra);
}

}  // namespace strata
