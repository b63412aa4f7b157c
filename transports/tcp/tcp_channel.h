// The Channel of the tcp transport. See tcp_transport.h.
#pragma once

#include <vector>

#include "transports/transport.h"

namespace strata {

class TcpChannel : public Channel {
 public:
  TcpChannel(Fd socket, int peer, size_t bufferBytes);

  const char* transportName() const override { return "tcp"; }
  Span acquireSend(size_t maxBytes) override;
  void commitSend(size_t bytes) override;
  size_t trySend(const void* src, size_t n) override;
  ConstSpan peekRecv() override;
  void consumeRecv(size_t n) override;
  bool progress() override;
  bool sendPending() const override { return sendHead_ < sendTail_; }
  int pollFd() const override { return fd_.get(); }
  void onReadable() override { fillRecv(); }
  void sendAbort(strataResult_t code, const std::string& message) noexcept override;

 private:
  bool flushStaged();            // writes staged frames; true if bytes moved
  bool fillRecv();               // reads into the receive staging area
  [[noreturn]] void throwLost(const char* what) const;
  [[noreturn]] void throwAbortFrame(uint32_t len);

  Fd fd_;
  int peer_;
  // Send side: staged frames [sendHead_, sendTail_) plus a direct frame in progress.
  std::vector<uint8_t> sendBuf_;
  size_t sendHead_ = 0, sendTail_ = 0;
  uint8_t directHeader_[kFrameHeaderBytes];
  size_t directHeaderLeft_ = 0;  // header bytes of the direct frame not yet written
  size_t directLeft_ = 0;        // payload bytes of the direct frame not yet written
  // Receive side: bytes [recvHead_, recvTail_) arrived and not yet consumed.
  std::vector<uint8_t> recvBuf_;
  size_t recvHead_ = 0, recvTail_ = 0;
  size_t frameLeft_ = 0;  // payload bytes of the current DATA frame not yet consumed
  bool peerClosed_ = false;
  bool aborted_ = false;
};

}  // namespace strata
