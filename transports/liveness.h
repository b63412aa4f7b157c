// The liveness line of a link whose data flows elsewhere (shm): a socket that
// carries nothing but ABORT frames and, when the peer process ends, EOF.
#pragma once

#include <string>

#include "bootstrap/socket.h"
#include "strata/strata.h"
#include "transports/transport.h"

namespace strata {

class LivenessSocket {
 public:
  LivenessSocket(Fd fd, int peer) : fd_(std::move(fd)), peer_(peer) {}
  int fd() const { return fd_.get(); }
  int peer() const { return peer_; }
  // Reads what arrived. Throws the peer's error on a complete ABORT frame.
  void onReadable();
  // Throws if the peer is gone or aborted (call when it is needed and silent).
  void throwIfGone() const;
  // A transfer with this peer failed inside a library (its endpoint's
  // teardown fails this rank's transfers, e.g. libfabric's shm provider with
  // EIO): waits up to `graceMs` for the peer's ABORT frame or EOF and throws
  // what it says, since an aborting peer sends its cause (which rank died)
  // before it tears down. Returns when neither came.
  void throwCauseWithin(int graceMs);
  // The same wait, but only an ABORT frame throws: for a failure that already
  // names the peer's exit (a single-copy read of a lender that is gone), where
  // the peer's own cause (a mismatch it found) is better, and EOF is not.
  void throwAbortWithin(int graceMs);
  bool gone() const { return closed_; }
  // The peer said GOODBYE before it closed: it destroyed its communicator
  // after its last operation, and what it sent may still be on its way.
  bool saidGoodbye() const { return goodbye_; }
  void sendAbort(strataResult_t code, const std::string& message) noexcept;
  void announce(const std::string& frame) noexcept;
  uint64_t announcedSeq() const { return announcedSeq_; }

 private:
  [[noreturn]] void throwAbort() const;
  // Reads until an ABORT frame (thrown), EOF or `graceMs` pass.
  void readFramesWithin(int graceMs);
  Fd fd_;
  int peer_;
  bool closed_ = false;
  bool goodbye_ = false;
  std::string inbox_;  // partial frame bytes
  uint64_t announcedSeq_ = 0;
  strataResult_t abortCode_ = strataSuccess;
  std::string abortMessage_;
};

// A Channel whose data flows elsewhere (shm, ofi, ucx) and whose only socket
// is the liveness line: polling, ABORT frames and EOF go through `live_`.
class LivenessChannel : public Channel {
 public:
  LivenessChannel(Fd socket, int peer) : live_(std::move(socket), peer) {}
  size_t pollFds(int* out, size_t max) const override {
    if (max == 0) return 0;
    out[0] = live_.fd();
    return 1;
  }
  void onReadable() override { live_.onReadable(); }
  void sendAbort(strataResult_t code, const std::string& message) noexcept override {
    live_.sendAbort(code, message);
  }
  void announceArrival(const std::string& frame) noexcept override { live_.announce(frame); }
  void sayGoodbye() noexcept override { live_.announce(encodeGoodbyeFrame()); }
  uint64_t announcedSeq() const override { return live_.announcedSeq(); }

 protected:
  LivenessSocket live_;
};

}  // namespace strata
