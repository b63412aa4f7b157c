// Lazy link set-up between ranks. The lower rank connects to the higher
// rank's listener; both send Hello + the transport's setup blob. Everything is
// non-blocking after the TCP connect, and connections from any rank (or from
// strangers, which are dropped and logged) are served while waiting, so two
// ranks connecting to each other's peers in any order cannot deadlock.
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/comm.h"
#include "core/error.h"
#include "core/log.h"

namespace strata {

namespace {

constexpr size_t kHelloHeadBytes = kHelloBytes + kBlobLengthBytes;
constexpr int64_t kStrangerGraceMs = 10000;

// A socket whose Hello + setup blob is still arriving.
struct Waiting {
  Fd fd;
  int peer = -1;  // for outgoing links: whom we called; -1 for accepted ones
  // A call strataRecvAny made in case that peer sends: if it fails, the
  // link is simply not made (a later connect() calls again).
  bool speculative = false;
  std::unique_ptr<PendingLink> link;
  SockAddr from;
  int64_t sinceMs = 0;
  size_t got = 0;
  std::vector<uint8_t> buf = std::vector<uint8_t>(kHelloHeadBytes);
  SetupBlob blob() const { return SetupBlob(buf.begin() + long(kHelloHeadBytes), buf.end()); }
};

// Reads more of the Hello; returns -1 on EOF/error or an oversized blob, 1
// when complete, 0 otherwise.
int readHello(Waiting& w) {
  for (;;) {
    ssize_t r = ::recv(w.fd.get(), w.buf.data() + w.got, w.buf.size() - w.got, MSG_DONTWAIT);
    if (r == 0) return -1;
    if (r < 0) return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -1;
    w.got += size_t(r);
    if (w.got == kHelloHeadBytes && w.buf.size() == kHelloHeadBytes) {
      int64_t len = decodeSetupBlobLength(w.buf.data() + kHelloBytes);
      if (len < 0) return -1;
      w.buf.resize(kHelloHeadBytes + size_t(len));
    }
    if (w.got == w.buf.size()) return 1;
  }
}

}  // namespace

struct Comm::Handshake {
  Comm& comm;
  int64_t deadline;
  std::vector<Waiting> waiting;

  void sendHello(int fd, int peer, uint32_t transportId, const SetupBlob& blob,
                 HelloKind kind = HelloKind::kData) {
    if (blob.size() > kMaxSetupBlobBytes)
      fail(strataInternalError, "transport %s made a %zu-byte set-up message (at most %zu)",
           transportAt(transportId).name(), blob.size(), kMaxSetupBlobBytes);
    std::vector<uint8_t> msg(kHelloHeadBytes + blob.size());
    Hello h;
    h.kind = kind;
    h.secret = comm.secret_;
    h.nranks = comm.nranks_;
    h.fromRank = comm.rank_;
    h.toRank = peer;
    h.transportId = transportId;
    encodeHello(h, msg.data());
    uint32_t len = uint32_t(blob.size());
    std::memcpy(msg.data() + kHelloBytes, &len, 4);
    if (!blob.empty()) std::memcpy(msg.data() + kHelloHeadBytes, blob.data(), blob.size());
    sendAll(fd, msg.data(), msg.size(), deadline, "sending a link handshake");
  }

  // Begins this side of a link to `peer`; if the transport cannot (no room
  // in /dev/shm, a refused registration), tells the peer why on `fd` before
  // the error goes on, so that it fails now with the reason instead of
  // waiting out its timeout for a link that will not come.
  std::unique_ptr<PendingLink> beginLink(int fd, int peer, uint32_t tid, SetupBlob* blob) {
    try {
      return transportAt(tid).begin(comm.linkContext(peer), blob);
    } catch (const Error& e) {
      std::string reason = e.what();
      SetupBlob text(reason.begin(), reason.begin() + long(std::min(reason.size(), kMaxSetupBlobBytes)));
      try {
        sendHello(fd, peer, tid, text, HelloKind::kLinkRefused);
      } catch (const Error&) {
        // the peer is gone too: our own error is the one to report
      }
      throw;
    }
  }

  // Whether a call to `peer` is pending; `needed` makes a speculative one
  // required (its failure is then an error).
  bool calling(int peer, bool needed = false) {
    for (Waiting& w : waiting)
      if (w.peer == peer) {
        if (needed) w.speculative = false;
        return true;
      }
    return false;
  }

  void call(int peer, bool speculative = false) {
    LinkContext ctx = comm.linkContext(peer);
    uint32_t tid = chooseTransport(ctx);
    Waiting w;
    // Every rank listens from init until it exits or aborts, so a refusal
    // means the peer is gone: say so now rather than retry until the timeout.
    try {
      w.fd = connectTo(comm.ranks_[size_t(peer)].addr, deadline, true);
    } catch (const Error& e) {
      if (e.code() != strataRemoteError) throw;
      fail(strataRemoteError, "rank %d is gone: %s (it exited or aborted)", peer, e.what());
    }
    w.peer = peer;
    w.speculative = speculative;
    w.from = comm.ranks_[size_t(peer)].addr;
    w.sinceMs = nowMs();
    SetupBlob blob;
    w.link = beginLink(w.fd.get(), peer, tid, &blob);
    sendHello(w.fd.get(), peer, tid, blob);
    waiting.push_back(std::move(w));
  }

  // Validates a complete Hello; on success returns the sender's rank.
  bool check(const Waiting& w, Hello* h, std::string* why) {
    if (!decodeHello(w.buf.data(), comm.secret_, h, why)) return false;
    if ((h->kind != HelloKind::kData && h->kind != HelloKind::kLinkRefused) || h->nranks != comm.nranks_ ||
        h->toRank != comm.rank_ || h->fromRank == comm.rank_) {
      *why = format("handshake for another communicator or rank (from %d to %d of %d)", h->fromRank,
                    h->toRank, h->nranks);
      return false;
    }
    if (w.peer >= 0 && h->fromRank != w.peer) {
      *why = format("expected rank %d to answer, got rank %d", w.peer, h->fromRank);
      return false;
    }
    if (h->transportId >= transportCount()) {
      *why = format("rank %d chose an unknown transport (id %u)", h->fromRank, h->transportId);
      return false;
    }
    uint32_t mine = chooseTransport(comm.linkContext(h->fromRank));
    if (h->transportId != mine) {
      *why = format("rank %d chose transport %s for this link but rank %d chose %s "
                    "(do STRATA_TRANSPORT / STRATA_NET / STRATA_HOSTID differ between ranks?)",
                    h->fromRank, transportAt(h->transportId).name(), comm.rank_,
                    transportAt(mine).name());
      return false;
    }
    if (w.peer < 0 && comm.connected(h->fromRank)) {
      *why = format("rank %d is already connected", h->fromRank);
      return false;
    }
    return true;
  }

  // Handles a complete Hello. Returns false if the connection was dropped.
  void complete(Waiting& w) {
    Hello h;
    std::string why;
    if (!check(w, &h, &why)) {
      if (w.peer >= 0 && !w.speculative)  // a rank we called answered wrongly: that is fatal
        fail(strataRemoteError, "link handshake with rank %d failed: %s", w.peer, why.c_str());
      STRATA_WARN("rank %d: dropped connection from %s: %s", comm.rank_, w.from.str().c_str(),
                  why.c_str());
      return;
    }
    if (h.kind == HelloKind::kLinkRefused) {
      SetupBlob reason = w.blob();
      fail(strataRemoteError, "rank %d could not set up its side of the %s link to rank %d: %s",
           h.fromRank, transportAt(h.transportId).name(), comm.rank_,
           std::string(reason.begin(), reason.end()).c_str());
    }
    if (w.peer < 0) {  // accepted: set up our side and answer
      SetupBlob blob;
      w.link = beginLink(w.fd.get(), h.fromRank, h.transportId, &blob);
      auto ch = w.link->finish(std::move(w.fd), w.blob());
      int fd = -1;
      ch->pollFds(&fd, 1);  // the first socket is the one the handshake runs on
      sendHello(fd, h.fromRank, h.transportId, blob);
      comm.addChannel(h.fromRank, std::move(ch));
    } else {
      comm.addChannel(h.fromRank, w.link->finish(std::move(w.fd), w.blob()));
    }
  }

  void acceptAll() {
    for (;;) {
      int fd = ::accept4(comm.listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) return;
      Waiting w;
      w.fd = Fd(fd);
      w.from = peerAddr(fd);
      w.sinceMs = nowMs();
      setNoDelay(fd);
      waiting.push_back(std::move(w));
    }
  }

  void pollOnce(int timeoutMs) {
    std::vector<pollfd> fds;
    fds.push_back({comm.listener_.get(), POLLIN, 0});
    for (auto& w : waiting) fds.push_back({w.fd.get(), POLLIN, 0});
    if (::poll(fds.data(), fds.size(), timeoutMs) < 0 && errno != EINTR) failErrno("poll()");
    if (fds[0].revents & POLLIN) acceptAll();
    int64_t now = nowMs();
    for (size_t i = 0; i < waiting.size();) {
      Waiting& w = waiting[i];
      int state = 0;
      if (i + 1 < fds.size() && fds[i + 1].revents) state = readHello(w);
      bool done = false;
      if (state == 1) {
        complete(w);
        done = true;
      } else if (state < 0) {
        if (w.peer >= 0 && !w.speculative)
          fail(strataRemoteError, "rank %d closed the connection during the link handshake "
                                  "(it exited, aborted or refused our secret)", w.peer);
        STRATA_WARN("rank %d: dropped connection from %s: closed before its handshake",
                    comm.rank_, w.from.str().c_str());
        done = true;
      } else if (w.peer < 0 && now - w.sinceMs > kStrangerGraceMs) {
        STRATA_WARN("rank %d: dropped connection from %s: no handshake within %lld ms", comm.rank_,
                    w.from.str().c_str(), (long long)kStrangerGraceMs);
        done = true;
      }
      if (done) {
        waiting.erase(waiting.begin() + long(i));
      } else {
        ++i;
      }
    }
  }
};

void Comm::HandshakeDeleter::operator()(Handshake* h) const { delete h; }

Comm::Handshake& Comm::handshake() {
  if (!handshake_) handshake_.reset(new Handshake{*this, 0, {}});
  return *handshake_;
}

void Comm::connect(const std::vector<int>& peers) {
  if (failed()) throwFailed();
  bool all = true;  // the steady state: every link already open, nothing made
  for (int p : peers) all &= p == rank_ || connected(p);
  if (all) return;
  auto missing = [&] {
    std::vector<int> out;
    for (int p : peers)
      if (p != rank_ && !connected(p) && std::find(out.begin(), out.end(), p) == out.end())
        out.push_back(p);
    return out;
  };
  std::vector<int> need = missing();
  if (need.empty()) return;
  Handshake& hs = handshake();
  hs.deadline = nowMs() + config_.timeoutMs;
  for (int p : need)
    if (rank_ < p && !hs.calling(p, true)) hs.call(p);
  for (;;) {
    need = missing();
    if (need.empty()) return;
    if (nowMs() > hs.deadline) {
      fail(strataTimeout, "rank %d could not connect to rank %d within %d ms (it never called the "
                          "collective, or cannot be reached at %s)",
           rank_, need[0], config_.timeoutMs, ranks_[size_t(need[0])].addr.str().c_str());
    }
    hs.pollOnce(5);
  }
}

void Comm::connectStep(const std::vector<int>& peers) {
  if (failed()) throwFailed();
  Handshake& hs = handshake();
  // A rank that refuses the call is gone (see call()): leave it, and do not ask again.
  hs.deadline = nowMs() + std::min(config_.timeoutMs, 1000);
  for (int p : peers) {
    if (p == rank_ || rank_ > p || connected(p) || hs.calling(p) ||
        std::find(unreachable_.begin(), unreachable_.end(), p) != unreachable_.end())
      continue;
    try {
      hs.call(p, true);
    } catch (const Error& e) {
      STRATA_INFO("rank %d: not linking to rank %d while receiving from any rank: %s", rank_, p,
                  e.what());
      unreachable_.push_back(p);
    }
  }
  hs.pollOnce(0);
}

}  // namespace strata
