#include "bootstrap/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "core/error.h"

namespace strata {

int64_t nowMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}
int64_t nowUs() {
  using namespace std::chrono;
  return duration_cast<microseconds>(steady_clock::now().time_since_epoch()).count();
}

std::string SockAddr::str() const {
  char buf[INET_ADDRSTRLEN] = {0};
  in_addr a;
  a.s_addr = ip;
  inet_ntop(AF_INET, &a, buf, sizeof(buf));
  return format("%s:%u", buf, unsigned(port));
}

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    reset();
    fd_ = o.release();
  }
  return *this;
}
Fd::~Fd() { reset(); }
void Fd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

static sockaddr_in toSockaddr(SockAddr a) {
  sockaddr_in s;
  std::memset(&s, 0, sizeof(s));
  s.sin_family = AF_INET;
  s.sin_addr.s_addr = a.ip;
  s.sin_port = htons(a.port);
  return s;
}

SockAddr parseHostPort(const std::string& text) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
    fail(strataInvalidArgument, "'%s' is not host:port", text.c_str());
  std::string host = text.substr(0, colon), portText = text.substr(colon + 1);
  char* end = nullptr;
  long port = std::strtol(portText.c_str(), &end, 10);
  if (*end != '\0' || port <= 0 || port > 65535)
    fail(strataInvalidArgument, "'%s' has no valid port (1..65535)", text.c_str());
  addrinfo hints;
  std::memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || !res)
    fail(strataInvalidArgument, "cannot resolve host '%s': %s", host.c_str(), gai_strerror(rc));
  SockAddr out;
  out.ip = reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr.s_addr;
  out.port = uint16_t(port);
  freeaddrinfo(res);
  return out;
}

static bool findInterface(const char* wanted, bool skipLoopback, SockAddr* out) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return false;
  bool found = false;
  for (ifaddrs* i = list; i && !found; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP)) continue;
    if (wanted && std::strcmp(i->ifa_name, wanted) != 0) continue;
    if (skipLoopback && (i->ifa_flags & IFF_LOOPBACK)) continue;
    out->ip = reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr;
    found = true;
  }
  freeifaddrs(list);
  return found;
}

SockAddr interfaceAddr(const std::string& ifname) {
  SockAddr a;
  if (!findInterface(ifname.c_str(), false, &a))
    fail(strataInvalidArgument, "network interface '%s' (STRATA_SOCKET_IFNAME) has no IPv4 address",
         ifname.c_str());
  return a;
}

SockAddr defaultHostAddr() {
  SockAddr a;
  if (!findInterface(nullptr, true, &a)) a.ip = htonl(INADDR_LOOPBACK);
  return a;
}

Fd listenOn(SockAddr bindAddr, int backlog) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) failErrno("socket()");
  int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in s = toSockaddr(bindAddr);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&s), sizeof(s)) != 0)
    fail(strataSystemError, "cannot listen on %s: %s", bindAddr.str().c_str(), std::strerror(errno));
  if (::listen(fd.get(), backlog) != 0) failErrno("listen()");
  return fd;
}

SockAddr localAddr(int fd) {
  sockaddr_in s;
  socklen_t len = sizeof(s);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&s), &len) != 0) failErrno("getsockname()");
  SockAddr a;
  a.ip = s.sin_addr.s_addr;
  a.port = ntohs(s.sin_port);
  return a;
}

SockAddr peerAddr(int fd) {
  sockaddr_in s;
  socklen_t len = sizeof(s);
  SockAddr a;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&s), &len) == 0) {
    a.ip = s.sin_addr.s_addr;
    a.port = ntohs(s.sin_port);
  }
  return a;
}

void setNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL, 0);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) failErrno("fcntl(O_NONBLOCK)");
}

void setNoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

Fd connectTo(SockAddr addr, int64_t deadlineMs, bool refusedIsFinal) {
  int delayMs = 1;
  for (;;) {
    Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd) failErrno("socket()");
    sockaddr_in s = toSockaddr(addr);
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&s), sizeof(s)) == 0) {
      setNoDelay(fd.get());
      return fd;
    }
    int e = errno;
    if (e == ECONNREFUSED && refusedIsFinal)
      fail(strataRemoteError, "%s refused the connection: nothing listens there any more", addr.str().c_str());
    bool retry = e == ECONNREFUSED || e == ETIMEDOUT || e == ENETUNREACH || e == EHOSTUNREACH ||
                 e == EAGAIN || e == EINTR;
    if (!retry) fail(strataSystemError, "connect to %s failed: %s", addr.str().c_str(), std::strerror(e));
    if (nowMs() >= deadlineMs)
      fail(strataTimeout, "could not connect to %s before the timeout (last error: %s)",
           addr.str().c_str(), std::strerror(e));
    std::this_thread::sleep_for(std::chrono::milliseconds(delayMs));
    delayMs = delayMs < 100 ? delayMs * 2 : 100;
  }
}

static void waitFor(int fd, short events, int64_t deadlineMs, const char* what) {
  for (;;) {
    int64_t left = deadlineMs - nowMs();
    if (left <= 0) fail(strataTimeout, "timed out while %s", what);
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, int(left > 1000 ? 1000 : left));
    if (rc > 0) return;
    if (rc < 0 && errno != EINTR) failErrno("poll()");
  }
}

void sendAll(int fd, const void* buf, size_t n, int64_t deadlineMs, const char* what) {
  const char* p = static_cast<const char*>(buf);
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      p += w;
      n -= size_t(w);
    } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      waitFor(fd, POLLOUT, deadlineMs, what);
    } else {
      fail(strataRemoteError, "connection lost while %s: %s", what, std::strerror(errno));
    }
  }
}

void recvAll(int fd, void* buf, size_t n, int64_t deadlineMs, const char* what) {
  char* p = static_cast<char*>(buf);
  while (n > 0) {
    ssize_t r = ::recv(fd, p, n, MSG_DONTWAIT);
    if (r > 0) {
      p += r;
      n -= size_t(r);
    } else if (r == 0) {
      fail(strataRemoteError, "connection closed by the other side while %s", what);
    } else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      waitFor(fd, POLLIN, deadlineMs, what);
    } else {
      fail(strataRemoteError, "connection lost while %s: %s", what, std::strerror(errno));
    }
  }
}

}  // namespace strata
