// One TCP socket of a tcp link: framed packets (DATA, ABORT), a send staging
// area for packets a reduction fills, direct sends from user memory, and a
// receive staging area read in place. TcpChannel stripes packets over several.
#pragma once

#include <vector>

#include "transports/transport.h"

namespace strata {

class TcpStream {
 public:
  TcpStream(Fd socket, int peer, size_t bufferBytes);

  Span acquireSend(size_t maxBytes);
  void commitSend(size_t bytes);
  // Starts (or continues) one DATA frame of the pieces' bytes (at most
  // Channel::kMaxSendPieces of them) written straight from them: one
  // sendmsg, no staging copy. A call continuing a frame passes the pieces of
  // the bytes not yet taken (more are cut at the frame's end).
  size_t trySendPieces(const ConstSpan* pieces, size_t count);
  bool directIdle() const { return directLeft_ == 0 && directHeaderLeft_ == 0; }
  ConstSpan peekRecv();
  void consumeRecv(size_t n);
  // True when the DATA frame being read has been consumed entirely.
  bool frameDone() const { return frameLeft_ == 0; }
  bool progress();
  bool sendPending() const { return sendHead_ < sendTail_; }
  int fd() const { return fd_.get(); }
  // Reads what arrived; takes ARRIVED frames at the head even when this
  // stream's data is not being read.
  void onReadable();
  void takeArrivedFrames();
  void sendAbort(const std::string& frame) noexcept;
  // After this link failed: throws the peer's ABORT if one has arrived behind
  // the data not read yet (an aborting peer sends it before it closes).
  // Reads what the socket holds; the stream is not used again after this.
  void throwAbortIfArrived();
  // Queues a control frame between packets (skipped while a packet is half sent).
  void sendControl(const std::string& frame) noexcept;
  uint64_t announcedSeq() const { return announcedSeq_; }

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
  uint64_t announcedSeq_ = 0;    // from ARRIVED frames
  // Receive side: bytes [recvHead_, recvTail_) arrived and not yet consumed.
  std::vector<uint8_t> recvBuf_;
  size_t recvHead_ = 0, recvTail_ = 0;
  size_t frameLeft_ = 0;  // payload bytes of the current DATA frame not yet consumed
  bool peerClosed_ = false;
  bool aborted_ = false;
};

}  // namespace strata
