#include <poll.h>
#include <sys/socket.h>

#include <cstring>
#include <memory>
#include <thread>

#include "bootstrap/rendezvous.h"
#include "core/error.h"
#include "core/log.h"

namespace strata {

namespace {

constexpr size_t kRegistrationBytes = kHelloBytes + kRankInfoBytes;
constexpr int64_t kHandshakeGraceMs = 10000;  // a connection must say Hello within this

// A connection that has not yet sent its full registration.
struct Pending {
  Fd fd;
  SockAddr from;
  int64_t sinceMs = 0;
  size_t got = 0;
  uint8_t buf[kRegistrationBytes];
};

class Root {
 public:
  Root(Fd listener, Secret secret, int timeoutMs)
      : listener_(std::move(listener)), secret_(secret), timeoutMs_(timeoutMs) {}

  void run() {
    int64_t deadline = nowMs() + timeoutMs_;
    try {
      while (nranks_ == 0 || registered_ < nranks_) {
        if (nowMs() > deadline) {
          STRATA_WARN("bootstrap root: gave up after %d ms with %d of %d ranks registered",
                      timeoutMs_, registered_, nranks_);
          return;
        }
        pollOnce();
      }
      reply(deadline);
    } catch (const Error& e) {
      STRATA_WARN("bootstrap root stopped: %s", e.what());
    }
  }

 private:
  void pollOnce() {
    std::vector<pollfd> fds;
    fds.push_back({listener_.get(), POLLIN, 0});
    for (auto& p : pending_) fds.push_back({p.fd.get(), POLLIN, 0});
    int rc = ::poll(fds.data(), fds.size(), 100);
    if (rc < 0) return;
    if (fds[0].revents & POLLIN) acceptOne();
    int64_t now = nowMs();
    for (size_t i = pending_.size(); i-- > 0;) {
      Pending& p = pending_[i];
      bool drop = false;
      if (fds.size() > i + 1 && fds[i + 1].revents) drop = !readMore(p);
      if (!drop && p.fd && now - p.sinceMs > kHandshakeGraceMs) {
        STRATA_WARN("bootstrap root: dropped connection from %s: no handshake within %lld ms",
                    p.from.str().c_str(), (long long)kHandshakeGraceMs);
        drop = true;
      }
      if (drop || !p.fd) pending_.erase(pending_.begin() + long(i));
    }
  }

  void acceptOne() {
    int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    Pending p;
    p.fd = Fd(fd);
    p.from = peerAddr(fd);
    p.sinceMs = nowMs();
    pending_.push_back(std::move(p));
  }

  // Returns false if the connection must be dropped. On a complete and valid
  // registration, moves the fd into ranks_ (leaving p.fd empty).
  bool readMore(Pending& p) {
    ssize_t r = ::recv(p.fd.get(), p.buf + p.got, kRegistrationBytes - p.got, MSG_DONTWAIT);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
      STRATA_WARN("bootstrap root: dropped connection from %s: closed before its handshake",
                  p.from.str().c_str());
      return false;
    }
    if (r < 0) return true;
    p.got += size_t(r);
    if (p.got < kHelloBytes) return true;
    Hello h;
    std::string why;
    if (!decodeHello(p.buf, secret_, &h, &why) || h.kind != HelloKind::kBootstrap) {
      if (why.empty()) why = "not a bootstrap connection";
      STRATA_WARN("bootstrap root: dropped connection from %s: %s", p.from.str().c_str(), why.c_str());
      return false;
    }
    if (nranks_ != 0 && h.nranks != nranks_) {
      STRATA_WARN("bootstrap root: dropped rank %d from %s: it says nranks=%d, others said %d",
                  h.fromRank, p.from.str().c_str(), h.nranks, nranks_);
      return false;
    }
    if (p.got < kRegistrationBytes) return true;
    if (nranks_ == 0) {
      nranks_ = h.nranks;
      ranks_.resize(size_t(nranks_));
      infos_.resize(size_t(nranks_));
    }
    if (ranks_[size_t(h.fromRank)]) {
      STRATA_WARN("bootstrap root: dropped a second registration of rank %d from %s", h.fromRank,
                  p.from.str().c_str());
      return false;
    }
    infos_[size_t(h.fromRank)] = decodeRankInfo(p.buf + kHelloBytes);
    ranks_[size_t(h.fromRank)] = std::move(p.fd);
    ++registered_;
    return true;
  }

  void reply(int64_t deadline) {
    std::vector<uint8_t> table(size_t(nranks_) * kRankInfoBytes);
    for (int r = 0; r < nranks_; ++r) encodeRankInfo(infos_[size_t(r)], &table[size_t(r) * kRankInfoBytes]);
    for (int r = 0; r < nranks_; ++r) {
      try {
        sendAll(ranks_[size_t(r)].get(), table.data(), table.size(), deadline,
                "sending the rank table");
      } catch (const Error& e) {
        STRATA_WARN("bootstrap root: rank %d: %s", r, e.what());
      }
    }
    STRATA_INFO("bootstrap root: served %d ranks", nranks_);
  }

  Fd listener_;
  Secret secret_;
  int timeoutMs_;
  std::vector<Pending> pending_;
  int nranks_ = 0;
  int registered_ = 0;
  std::vector<Fd> ranks_;
  std::vector<RankInfo> infos_;
};

}  // namespace

void startRendezvousRoot(Fd listener, const Secret& secret, int timeoutMs) {
  auto root = std::make_shared<Root>(std::move(listener), secret, timeoutMs);
  std::thread([root] { root->run(); }).detach();
}

std::vector<RankInfo> rendezvous(SockAddr root, const Secret& secret, int nranks, int rank,
                                 RankInfo mine, int64_t deadlineMs) {
  Fd fd = connectTo(root, deadlineMs);
  if (mine.addr.ip == 0) mine.addr.ip = localAddr(fd.get()).ip;
  uint8_t msg[kRegistrationBytes];
  Hello h;
  h.kind = HelloKind::kBootstrap;
  h.secret = secret;
  h.nranks = nranks;
  h.fromRank = rank;
  encodeHello(h, msg);
  encodeRankInfo(mine, msg + kHelloBytes);
  sendAll(fd.get(), msg, sizeof(msg), deadlineMs, "registering with the bootstrap root");
  std::vector<uint8_t> table(size_t(nranks) * kRankInfoBytes);
  try {
    recvAll(fd.get(), table.data(), table.size(), deadlineMs,
            "waiting for all ranks to register with the bootstrap root");
  } catch (const Error& e) {
    if (e.code() == strataRemoteError)
      fail(strataRemoteError,
           "the bootstrap root at %s closed the connection of rank %d (another process registered "
           "as the same rank, or ranks disagree on nranks=%d)",
           root.str().c_str(), rank, nranks);
    if (e.code() == strataTimeout)
      fail(strataTimeout, "rank %d: not all %d ranks registered with the bootstrap root at %s within the timeout",
           rank, nranks, root.str().c_str());
    throw;
  }
  std::vector<RankInfo> out(static_cast<size_t>(nranks));
  for (int r = 0; r < nranks; ++r) out[size_t(r)] = decodeRankInfo(&table[size_t(r) * kRankInfoBytes]);
  return out;
}

}  // namespace strata
