#include "exec/waiter.h"

#include <poll.h>
#include <sched.h>
#include <time.h>

#include <vector>

#include "bootstrap/socket.h"
#include "exec/link_set.h"
#include "core/error.h"

namespace strata {

namespace {
constexpr uint64_t kSpins = 64;
constexpr int64_t kLivenessPeriodUs = 1000;
constexpr int64_t kSleepAfterUs = 2000;
constexpr long kNapNs = 50000;
}  // namespace

void Waiter::pollLinks(int timeoutMs) {
  const auto& links = comm_.links();
  std::vector<pollfd> fds;
  std::vector<Channel*> owner;
  for (Channel* ch : links) {
    int f[16];
    size_t n = ch->pollFds(f, 16);
    for (size_t i = 0; i < n; ++i) {
      fds.push_back({f[i], POLLIN, 0});
      owner.push_back(ch);
    }
  }
  int rc = ::poll(fds.data(), fds.size(), timeoutMs);
  if (rc <= 0) return;
  for (size_t i = 0; i < fds.size(); ++i)
    if (fds[i].revents) owner[i]->onReadable();
}

void Waiter::idle(const std::function<std::string()>& describe) {
  if (idleCount_++ == 0) idleSinceUs_ = nowUs();
  if (idleCount_ < kSpins) {
    __builtin_ia32_pause();
    return;
  }
  for (Channel* ch : comm_.links()) ch->progress();
  int64_t now = nowUs();
  int64_t idleUs = now - idleSinceUs_;
  if (idleUs / 1000 >= timeoutMs_)
    fail(strataTimeout, "rank %d timed out after %d ms: it %s", comm_.rank(), timeoutMs_,
         describe().c_str());
  if (now - lastPollUs_ >= kLivenessPeriodUs) {
    lastPollUs_ = now;
    pollLinks(0);
  }
  if (idleUs >= kSleepAfterUs) {
    // A long wait (a late peer, or more ranks than cores): nap briefly. Not
    // in poll(): shared-memory data would not wake it.
    struct timespec nap = {0, kNapNs};
    nanosleep(&nap, nullptr);
  } else {
    sched_yield();
  }
}

}  // namespace strata
