#include "exec/waiter.h"

#include <poll.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <vector>

#include "bootstrap/socket.h"
#include "exec/link_set.h"
#include "core/error.h"

namespace strata {

namespace {
// Pauses a wait spins before it yields the core, where every rank has one
// (Waiter::spins_); where ranks outnumber CPUs it yields at once.
constexpr uint64_t kSpins = 64;
constexpr int64_t kLivenessPeriodUs = 1000;
constexpr int64_t kSleepAfterUs = 2000;
constexpr long kNapNs = 50000;
// Time allowed for the peers' ARRIVED frames to come after they were due.
constexpr int64_t kAnnounceTravelUs = 500000;
}  // namespace

Waiter::Waiter(LinkSet& comm, int timeoutMs, ExecProbe* probe, const OpDesc* op)
    : comm_(comm), timeoutMs_(timeoutMs), probe_(probe), spins_(comm.coresShared() ? 0 : kSpins),
      op_(op && op->seq != 0 ? op : nullptr) {}

int64_t Waiter::graceUs(int timeoutMs) {
  return std::clamp<int64_t>(int64_t(timeoutMs) * 250, 200000, 30000000);
}

void Waiter::endIdleSpan() {
  // A span that ended while still spinning read no clock: it counts as no wait
  // (at most kSpins pauses, a microsecond or two), so short waits cost nothing.
  if (idleCount_ > spins_ && probe_) {
    int64_t now = nowUs();
    probe_->waitUs += now - idleSinceUs_;
    if (kTracingBuilt && probe_->tracing && now - idleSinceUs_ >= ExecProbe::kTracedWaitUs &&
        probe_->waits.size() < ExecProbe::kMaxTracedWaits)
      probe_->waits.push_back({idleSinceUs_, now});
  }
  idleCount_ = 0;
  deferredUntilUs_ = 0;
  noteCount_ = 0;
}

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

bool Waiter::absenceIsKnown() const {
  return idleCount_ > spins_ && nowUs() - idleSinceUs_ >= announceAfterUs() + kAnnounceTravelUs;
}

void Waiter::idle(const std::function<WaitState()>& describe) {
  if (++idleCount_ <= spins_) {
    __builtin_ia32_pause();
    return;
  }
  for (Channel* ch : comm_.links()) ch->progress();
  int64_t now = nowUs();
  if (idleCount_ == spins_ + 1) idleSinceUs_ = now;  // the wait is timed from the end of spinning
  int64_t idleUs = now - idleSinceUs_;
  if (idleUs / 1000 >= timeoutMs_) {
    if (deferredUntilUs_ == 0) {
      WaitState w = describe();
      deferredUntilUs_ = w.peersArrived ? now + graceUs(timeoutMs_) : now;
    }
    if (now >= deferredUntilUs_)
      fail(strataTimeout, "rank %d timed out after %d ms: it %s", comm_.rank(),
           int(idleUs / 1000), describe().text.c_str());
  }
  if (op_ && !announced_ && idleUs >= announceAfterUs()) {
    announced_ = true;
    std::string frame = encodeArrivedFrame(op_->seq, uint8_t(op_->coll));
    for (Channel* ch : comm_.links()) ch->announceArrival(frame);
  }
  // What a long wait waits for, refreshed every second (after the peers'
  // ARRIVED frames had time to come).
  if (probe_ && probe_->longWaits && idleUs >= announceAfterUs() + kAnnounceTravelUs + noteCount_ * 1000000) {
    ++noteCount_;
    probe_->longWaits->longWait(describe().text, idleUs);
  }
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
