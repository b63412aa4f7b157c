#include "transports/liveness.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "core/error.h"
#include "transports/transport.h"

namespace strata {

void LivenessSocket::onReadable() {
  // EOF alone is not an error: a peer that finished its part may exit. It
  // becomes one only when this rank still needs that peer (throwIfGone).
  if (closed_) return;
  uint8_t buf[4096];
  for (;;) {
    ssize_t r = ::recv(fd_.get(), buf, sizeof(buf), MSG_DONTWAIT);
    if (r > 0) {
      inbox_.append(reinterpret_cast<char*>(buf), size_t(r));
      continue;
    }
    if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) closed_ = true;
    break;
  }
  while (inbox_.size() >= kFrameHeaderBytes) {
    uint32_t type, len;
    std::memcpy(&type, inbox_.data(), 4);
    std::memcpy(&len, inbox_.data() + 4, 4);
    if (type == uint32_t(FrameType::kArrived) && len == kArrivedBytes) {
      if (inbox_.size() < kFrameHeaderBytes + len) break;
      uint64_t seq = 0;
      decodeArrivedPayload(reinterpret_cast<const uint8_t*>(inbox_.data()) + kFrameHeaderBytes, len, &seq);
      if (seq > announcedSeq_) announcedSeq_ = seq;
      inbox_.erase(0, kFrameHeaderBytes + len);
      continue;
    }
    if (type == uint32_t(FrameType::kGoodbye) && len == 0) {
      goodbye_ = true;
      inbox_.erase(0, kFrameHeaderBytes);
      continue;
    }
    if (type != uint32_t(FrameType::kAbort) || len > kMaxAbortBytes) {
      closed_ = true;
      abortCode_ = strataRemoteError;
      abortMessage_ = format("rank %d sent an invalid control frame (type %u, length %u)", peer_,
                             type, len);
      throwAbort();
    }
    if (inbox_.size() < kFrameHeaderBytes + len) break;
    strataResult_t code;
    std::string msg;
    if (!decodeAbortPayload(reinterpret_cast<const uint8_t*>(inbox_.data()) + kFrameHeaderBytes,
                            len, &code, &msg)) {
      code = strataRemoteError;
      msg = "(malformed abort message)";
    }
    abortCode_ = code;
    abortMessage_ = msg;
    closed_ = true;
    throwAbort();
  }
}

void LivenessSocket::throwAbort() const {
  throw PeerAbort(abortCode_, format("rank %d aborted: %s", peer_, abortMessage_.c_str()));
}

void LivenessSocket::throwIfGone() const {
  if (abortCode_ != strataSuccess) throwAbort();
  if (closed_)
    fail(strataRemoteError, "rank %d closed its connection (the process exited or was killed)",
         peer_);
}

void LivenessSocket::readFramesWithin(int graceMs) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(graceMs);
  while (!closed_) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    if (left.count() <= 0) return;
    pollfd p{fd_.get(), POLLIN, 0};
    if (::poll(&p, 1, int(left.count())) > 0) onReadable();  // throws on an ABORT frame
  }
}

void LivenessSocket::throwCauseWithin(int graceMs) {
  readFramesWithin(graceMs);
  if (closed_) throwIfGone();
}

void LivenessSocket::throwAbortWithin(int graceMs) {
  if (abortCode_ != strataSuccess) throwAbort();
  readFramesWithin(graceMs);
}

void LivenessSocket::announce(const std::string& frame) noexcept {
  if (!fd_ || closed_) return;
  (void)::send(fd_.get(), frame.data(), frame.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
}

void LivenessSocket::sendAbort(strataResult_t code, const std::string& message) noexcept {
  if (!fd_) return;
  std::string frame = encodeAbortFrame(code, message);
  (void)::send(fd_.get(), frame.data(), frame.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  ::shutdown(fd_.get(), SHUT_RDWR);
  closed_ = true;
}

}  // namespace strata
