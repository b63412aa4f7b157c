#include "transports/tcp/tcp_stream.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace strata {

namespace {
constexpr size_t kMinSendSpace = 4096;
bool wouldBlock(int e) { return e == EAGAIN || e == EWOULDBLOCK || e == EINTR; }
}  // namespace

TcpStream::TcpStream(Fd socket, int peer, size_t bufferBytes)
    : fd_(std::move(socket)), peer_(peer), sendBuf_(bufferBytes), recvBuf_(bufferBytes) {
  setNonBlocking(fd_.get());
  setNoDelay(fd_.get());
  int sz = int(bufferBytes);
  setsockopt(fd_.get(), SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
  setsockopt(fd_.get(), SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
}

void TcpStream::throwLost(const char* what) const {
  fail(strataRemoteError, "connection to rank %d lost while %s (the process exited, was killed or aborted)",
       peer_, what);
}

bool TcpStream::flushStaged() {
  bool moved = false;
  while (sendHead_ < sendTail_) {
    ssize_t w = ::send(fd_.get(), &sendBuf_[sendHead_], sendTail_ - sendHead_,
                       MSG_DONTWAIT | MSG_NOSIGNAL);
    if (w > 0) {
      sendHead_ += size_t(w);
      moved = true;
    } else if (w < 0 && wouldBlock(errno)) {
      break;
    } else {
      throwLost("sending");
    }
  }
  if (sendHead_ == sendTail_) sendHead_ = sendTail_ = 0;
  return moved;
}

Span TcpStream::acquireSend(size_t maxBytes) {
  if (directLeft_ > 0 || directHeaderLeft_ > 0) return {};
  size_t free = sendBuf_.size() - sendTail_;
  if (free < kFrameHeaderBytes + kMinSendSpace && free < kFrameHeaderBytes + maxBytes) {
    flushStaged();
    free = sendBuf_.size() - sendTail_;
    if (free < kFrameHeaderBytes + kMinSendSpace && free < kFrameHeaderBytes + maxBytes) return {};
  }
  size_t n = free - kFrameHeaderBytes;
  return {&sendBuf_[sendTail_ + kFrameHeaderBytes], n < maxBytes ? n : maxBytes};
}

void TcpStream::commitSend(size_t bytes) {
  encodeFrameHeader(FrameType::kData, uint32_t(bytes), &sendBuf_[sendTail_]);
  sendTail_ += kFrameHeaderBytes + bytes;
  flushStaged();
}

size_t TcpStream::trySendPieces(const ConstSpan* pieces, size_t count) {
  if (sendHead_ < sendTail_ && (flushStaged(), sendHead_ < sendTail_)) return 0;
  if (count > Channel::kMaxSendPieces) count = Channel::kMaxSendPieces;
  if (directLeft_ == 0 && directHeaderLeft_ == 0) {
    size_t n = 0;
    for (size_t i = 0; i < count; ++i) n += pieces[i].size;
    if (n > (1u << 30)) n = 1u << 30;  // frames carry a 32-bit length
    encodeFrameHeader(FrameType::kData, uint32_t(n), directHeader_);
    directHeaderLeft_ = kFrameHeaderBytes;
    directLeft_ = n;
  }
  iovec iov[1 + Channel::kMaxSendPieces];
  int cnt = 0;
  if (directHeaderLeft_ > 0)
    iov[cnt++] = {directHeader_ + (kFrameHeaderBytes - directHeaderLeft_), directHeaderLeft_};
  size_t payload = 0;  // of this call, cut at the frame's end
  for (size_t i = 0; i < count && payload < directLeft_; ++i) {
    const size_t k = std::min(pieces[i].size, directLeft_ - payload);
    iov[cnt++] = {const_cast<uint8_t*>(pieces[i].data), k};
    payload += k;
  }
  msghdr msg;
  std::memset(&msg, 0, sizeof(msg));
  msg.msg_iov = iov;
  msg.msg_iovlen = size_t(cnt);
  ssize_t w = ::sendmsg(fd_.get(), &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
  if (w < 0) {
    if (wouldBlock(errno)) return 0;
    throwLost("sending");
  }
  size_t written = size_t(w);
  size_t fromHeader = written < directHeaderLeft_ ? written : directHeaderLeft_;
  directHeaderLeft_ -= fromHeader;
  size_t taken = written - fromHeader;
  directLeft_ -= taken;
  return taken;
}

bool TcpStream::fillRecv() {
  if (peerClosed_) return false;
  if (recvHead_ == recvTail_) recvHead_ = recvTail_ = 0;
  size_t space = recvBuf_.size() - recvTail_;
  if (space < recvBuf_.size() / 4 && recvHead_ > 0) {
    std::memmove(recvBuf_.data(), &recvBuf_[recvHead_], recvTail_ - recvHead_);
    recvTail_ -= recvHead_;
    recvHead_ = 0;
    space = recvBuf_.size() - recvTail_;
  }
  if (space == 0) return false;
  ssize_t r = ::recv(fd_.get(), &recvBuf_[recvTail_], space, MSG_DONTWAIT);
  if (r > 0) {
    recvTail_ += size_t(r);
    return true;
  }
  if (r == 0 || !wouldBlock(errno)) peerClosed_ = true;
  return false;
}

void TcpStream::throwAbortFrame(uint32_t len) {
  strataResult_t code = strataRemoteError;
  std::string msg = "(malformed abort message)";
  decodeAbortPayload(&recvBuf_[recvHead_ + kFrameHeaderBytes], len, &code, &msg);
  aborted_ = true;
  throw PeerAbort(code, format("rank %d aborted: %s", peer_, msg.c_str()));
}

ConstSpan TcpStream::peekRecv() {
  for (;;) {
    size_t have = recvTail_ - recvHead_;
    if (frameLeft_ > 0 && have > 0)
      return {&recvBuf_[recvHead_], have < frameLeft_ ? have : frameLeft_};
    if (frameLeft_ == 0 && have >= kFrameHeaderBytes) {
      uint32_t type, len;
      std::memcpy(&type, &recvBuf_[recvHead_], 4);
      std::memcpy(&len, &recvBuf_[recvHead_ + 4], 4);
      if (type == uint32_t(FrameType::kData)) {
        recvHead_ += kFrameHeaderBytes;
        frameLeft_ = len;
        continue;
      }
      if (type == uint32_t(FrameType::kArrived) && len == kArrivedBytes) {
        size_t before = recvHead_;
        takeArrivedFrames();
        if (recvHead_ != before) continue;  // else the frame is not complete yet
      } else if (type != uint32_t(FrameType::kAbort) || len > kMaxAbortBytes) {
        fail(strataRemoteError, "rank %d sent an invalid frame (type %u, length %u): protocol error",
             peer_, type, len);
      } else if (have >= kFrameHeaderBytes + len) {
        throwAbortFrame(len);
      }
    }
    if (!fillRecv()) {
      if (peerClosed_) throwLost("receiving");
      return {};
    }
  }
}

void TcpStream::onReadable() {
  fillRecv();
  takeArrivedFrames();
}

void TcpStream::takeArrivedFrames() {
  while (frameLeft_ == 0 && recvTail_ - recvHead_ >= kFrameHeaderBytes + kArrivedBytes) {
    uint32_t type, len;
    std::memcpy(&type, &recvBuf_[recvHead_], 4);
    std::memcpy(&len, &recvBuf_[recvHead_ + 4], 4);
    if (type != uint32_t(FrameType::kArrived) || len != kArrivedBytes) break;
    uint64_t seq = 0;
    decodeArrivedPayload(&recvBuf_[recvHead_ + kFrameHeaderBytes], len, &seq);
    if (seq > announcedSeq_) announcedSeq_ = seq;
    recvHead_ += kFrameHeaderBytes + len;
  }
}

void TcpStream::consumeRecv(size_t n) {
  recvHead_ += n;
  frameLeft_ -= n;
}

bool TcpStream::progress() {
  bool moved = flushStaged();
  if (fillRecv()) {
    takeArrivedFrames();
    moved = true;
  }
  return moved;
}

void TcpStream::sendControl(const std::string& frame) noexcept {
  if (!fd_ || aborted_ || !directIdle() || sendBuf_.size() - sendTail_ < frame.size()) return;
  std::memcpy(&sendBuf_[sendTail_], frame.data(), frame.size());
  sendTail_ += frame.size();
  try {
    flushStaged();
  } catch (...) {
  }
}

void TcpStream::throwAbortIfArrived() {
  constexpr size_t kMostScanned = size_t(64) << 20;
  std::vector<uint8_t> bytes(recvBuf_.begin() + long(recvHead_), recvBuf_.begin() + long(recvTail_));
  uint8_t chunk[65536];
  while (fd_ && bytes.size() < kMostScanned) {
    ssize_t r = ::recv(fd_.get(), chunk, sizeof(chunk), MSG_DONTWAIT);
    if (r <= 0) break;
    bytes.insert(bytes.end(), chunk, chunk + r);
  }
  size_t at = frameLeft_;  // the rest of the DATA frame being read, then frame after frame
  while (at + kFrameHeaderBytes <= bytes.size()) {
    uint32_t type, len;
    std::memcpy(&type, &bytes[at], 4);
    std::memcpy(&len, &bytes[at + 4], 4);
    if (type == uint32_t(FrameType::kAbort) && len <= kMaxAbortBytes) {
      if (at + kFrameHeaderBytes + len > bytes.size()) return;
      strataResult_t code = strataRemoteError;
      std::string msg = "(malformed abort message)";
      decodeAbortPayload(&bytes[at + kFrameHeaderBytes], len, &code, &msg);
      throw PeerAbort(code, format("rank %d aborted: %s", peer_, msg.c_str()));
    }
    if (type != uint32_t(FrameType::kData) && type != uint32_t(FrameType::kArrived)) return;
    at += kFrameHeaderBytes + len;
  }
}

void TcpStream::sendAbort(const std::string& frame) noexcept {
  if (!fd_ || aborted_) return;
  aborted_ = true;
  // Only when no frame is half written: otherwise the peer could not parse it.
  if (directLeft_ == 0 && directHeaderLeft_ == 0 && sendHead_ == sendTail_)
    (void)::send(fd_.get(), frame.data(), frame.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  ::shutdown(fd_.get(), SHUT_RDWR);
}

}  // namespace strata
