#include "transports/tcp/tcp_channel.h"

namespace strata {

TcpChannel::TcpChannel(std::vector<Fd> sockets, int peer, size_t bufferBytes) {
  for (Fd& s : sockets) streams_.push_back(std::make_unique<TcpStream>(std::move(s), peer, bufferBytes));
}

void TcpChannel::commitSend(size_t bytes) {
  reportingPeerCause([&] { sendStream().commitSend(bytes); });
  ++sent_;
}

size_t TcpChannel::trySend(const void* src, size_t n) {
  const ConstSpan piece{static_cast<const uint8_t*>(src), n};
  return trySendPieces(&piece, 1);
}

size_t TcpChannel::trySendPieces(const ConstSpan* pieces, size_t count) {
  TcpStream& s = sendStream();
  bool wasIdle = s.directIdle();
  size_t taken = reportingPeerCause([&] { return s.trySendPieces(pieces, count); });
  if (s.directIdle() && (taken > 0 || !wasIdle)) ++sent_;  // the frame is complete
  return taken;
}

void TcpChannel::consumeRecv(size_t n) {
  TcpStream& s = recvStream();
  s.consumeRecv(n);
  if (s.frameDone()) ++received_;
}

bool TcpChannel::progress() {
  return reportingPeerCause([&] {
    bool moved = false;
    for (auto& s : streams_) moved |= s->progress();
    return moved;
  });
}

bool TcpChannel::sendPending() const {
  for (const auto& s : streams_)
    if (s->sendPending()) return true;
  return false;
}

size_t TcpChannel::pollFds(int* out, size_t max) const {
  size_t n = 0;
  for (const auto& s : streams_)
    if (n < max) out[n++] = s->fd();
  return n;
}

void TcpChannel::onReadable() {
  for (auto& s : streams_) s->onReadable();
}

void TcpChannel::sendAbort(strataResult_t code, const std::string& message) noexcept {
  std::string frame = encodeAbortFrame(code, message);
  for (auto& s : streams_) s->sendAbort(frame);
}

}  // namespace strata
