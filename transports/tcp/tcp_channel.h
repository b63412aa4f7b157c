// The Channel of the tcp transport: packets striped round-robin over one or
// more TcpStreams (STRATA_TCP_SOCKETS), so large messages use several
// connections at once. Both sides count packets, so packet p always travels
// on stream p % n and order is kept without extra headers.
#pragma once

#include <algorithm>
#include <memory>
#include <vector>

#include "transports/tcp/tcp_stream.h"

namespace strata {

class TcpChannel : public Channel {
 public:
  TcpChannel(std::vector<Fd> sockets, int peer, size_t bufferBytes);

  const char* transportName() const override { return "tcp"; }
  Span acquireSend(size_t maxBytes) override {
    return reportingPeerCause([&] { return sendStream().acquireSend(maxBytes); });
  }
  void commitSend(size_t bytes) override;
  size_t trySend(const void* src, size_t n) override;
  bool sendsFromPieces() const override { return true; }
  size_t trySendPieces(const ConstSpan* pieces, size_t count) override;
  ConstSpan peekRecv() override {
    return reportingPeerCause([&] { return recvStream().peekRecv(); });
  }
  void consumeRecv(size_t n) override;
  bool progress() override;
  bool sendPending() const override;
  size_t pollFds(int* out, size_t max) const override;
  void onReadable() override;
  void sendAbort(strataResult_t code, const std::string& message) noexcept override;
  void announceArrival(const std::string& frame) noexcept override {
    for (auto& s : streams_) s->sendControl(frame);
  }
  uint64_t announcedSeq() const override {
    uint64_t m = 0;
    for (const auto& s : streams_) m = std::max(m, s->announcedSeq());
    return m;
  }

 private:
  // Runs a stream call; a lost connection it throws is reported as the
  // peer's ABORT when one arrived on any of the link's sockets.
  template <typename Call>
  auto reportingPeerCause(Call call) -> decltype(call()) {
    return preferringPeerCause(call, [&] {
      for (auto& s : streams_) s->throwAbortIfArrived();
    });
  }
  TcpStream& sendStream() { return *streams_[sent_ % streams_.size()]; }
  TcpStream& recvStream() { return *streams_[received_ % streams_.size()]; }
  std::vector<std::unique_ptr<TcpStream>> streams_;
  uint64_t sent_ = 0;      // packets sent (complete frames)
  uint64_t received_ = 0;  // packets consumed
};

}  // namespace strata
