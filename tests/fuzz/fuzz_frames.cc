// libFuzzer target: the framed byte streams a peer writes into a link's
// sockets, parsed exactly as in a run: a TCP data stream (DATA, ABORT, ARRIVED
// frames, read through peekRecv / consumeRecv) and a liveness socket (ABORT,
// ARRIVED frames). The first input byte picks the parser. Hostile lengths must
// end in an error naming the peer, never in a crash, a hang or a huge buffer.
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "transports/liveness.h"
#include "transports/tcp/tcp_stream.h"

using namespace strata;

namespace {

// A connected pair: the input is written to one end, which is then closed.
bool feed(const uint8_t* p, size_t n, Fd* reader) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return false;
  int sz = 1 << 20;
  setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
  setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
  size_t off = 0;
  while (off < n) {
    ssize_t w = ::send(sv[0], p + off, n - off, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (w <= 0) break;
    off += size_t(w);
  }
  ::close(sv[0]);
  *reader = Fd(sv[1]);
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > (1 << 18)) return 0;
  Fd fd;
  if (!feed(data + 1, size - 1, &fd)) return 0;
  if (data[0] & 1) {
    LivenessSocket live(std::move(fd), 3);
    try {
      for (int i = 0; i < 64 && !live.gone(); ++i) live.onReadable();
      live.throwIfGone();
    } catch (const Error&) {
    }
    return 0;
  }
  TcpStream stream(std::move(fd), 3, 1 << 16);
  try {
    // Every byte read is consumed, so each round makes progress or ends.
    for (size_t rounds = 0; rounds < size + 64; ++rounds) {
      stream.onReadable();
      ConstSpan s = stream.peekRecv();
      if (s.size == 0) break;
      volatile uint8_t sink = s.data[0] ^ s.data[s.size - 1];
      (void)sink;
      stream.consumeRecv(s.size);
    }
  } catch (const Error&) {
  }
  return 0;
}
