// Thin, exception-throwing helpers over IPv4 TCP sockets, used by the
// bootstrap and by the data connections. Deadlines are steady-clock
// milliseconds; a missed deadline throws strataTimeout, a closed or reset
// peer strataRemoteError.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace strata {

int64_t nowMs();
int64_t nowUs();

struct SockAddr {
  uint32_t ip = 0;    // network byte order
  uint16_t port = 0;  // host byte order
  std::string str() const;
};

// Owns a file descriptor; closes it on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept;
  ~Fd();
  int get() const { return fd_; }
  int release() { int f = fd_; fd_ = -1; return f; }
  void reset();
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// "host:port" (host a name or dotted quad) -> address. Throws InvalidArgument.
SockAddr parseHostPort(const std::string& text);
// The IPv4 address of a named interface; throws InvalidArgument if it has none.
SockAddr interfaceAddr(const std::string& ifname);
// The first non-loopback IPv4 address that is up, else 127.0.0.1.
SockAddr defaultHostAddr();

Fd listenOn(SockAddr bind, int backlog = 1024);
SockAddr localAddr(int fd);
SockAddr peerAddr(int fd);
// Connects, retrying refused connections until the deadline (the peer may not
// listen yet), unless `refusedIsFinal`: then a refusal throws strataRemoteError
// at once (for a peer known to have listened: it is gone).
Fd connectTo(SockAddr addr, int64_t deadlineMs, bool refusedIsFinal = false);
void setNonBlocking(int fd);
void setNoDelay(int fd);

// Blocking-with-deadline I/O on a socket of either mode.
void sendAll(int fd, const void* buf, size_t n, int64_t deadlineMs, const char* what);
void recvAll(int fd, void* buf, size_t n, int64_t deadlineMs, const char* what);

}  // namespace strata
