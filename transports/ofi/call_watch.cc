#include "transports/ofi/call_watch.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

#include "core/error.h"
#include "core/log.h"

namespace strata {

namespace {

using Clock = std::chrono::steady_clock;

// How long one call may spin while a peer process is dead before it is
// jumped out of. Provider calls are non-blocking: a live one returns in
// microseconds, a long copy in milliseconds.
constexpr std::chrono::milliseconds kStuckAfter{500};
constexpr std::chrono::milliseconds kTick{100};

// The signal that carries the watchdog's request into the stuck thread.
int escapeSignal() { return SIGRTMAX - 2; }

thread_local CallWatch* tActive = nullptr;

}  // namespace

bool processGone(pid_t pid) {
  if (::kill(pid, 0) != 0) return errno == ESRCH;
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", int(pid));
  FILE* f = std::fopen(path, "r");
  if (!f) return false;
  char text[512] = "";
  size_t n = std::fread(text, 1, sizeof(text) - 1, f);
  std::fclose(f);
  text[n] = '\0';
  const char* close = std::strrchr(text, ')');  // "pid (comm) S ..."; comm may hold spaces
  return close && close[1] == ' ' && (close[2] == 'Z' || close[2] == 'X');
}

// The one thread per process that looks for stuck calls (see the header).
class CallWatchdog {
 public:
  static CallWatchdog& get() {
    static CallWatchdog* dog = new CallWatchdog();  // never destroyed: the thread outlives statics
    return *dog;
  }

  void add(CallWatch* w) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (threadPid_ != ::getpid()) {  // first use, or a forked child (threads do not survive fork)
      threadPid_ = ::getpid();
      std::thread([this] { loop(); }).detach();
    }
    watched_.push_back({w, 0, Clock::now()});
  }

  void remove(CallWatch* w) {
    std::lock_guard<std::mutex> lock(mutex_);
    watched_.erase(std::remove_if(watched_.begin(), watched_.end(), [w](const Seen& s) { return s.watch == w; }),
                   watched_.end());
  }

  bool canSignal() const { return canSignal_; }

 private:
  struct Seen {
    CallWatch* watch;
    uint64_t word;  // the call word when last looked at
    Clock::time_point since;
  };

  CallWatchdog() {
    struct sigaction current;
    if (sigaction(escapeSignal(), nullptr, &current) == 0 && !(current.sa_flags & SA_SIGINFO) &&
        current.sa_handler == SIG_DFL) {
      struct sigaction sa = {};
      sa.sa_handler = CallWatch::onSignal;
      sigemptyset(&sa.sa_mask);
      canSignal_ = sigaction(escapeSignal(), &sa, nullptr) == 0;
    }
    if (!canSignal_)
      STRATA_WARN("signal %d (SIGRTMAX-2) has another handler: a libfabric call stuck on a dead peer cannot be "
                  "escaped and will hang",
                  escapeSignal());
    // A fork while the watchdog holds the lock must not leave it held in the child.
    pthread_atfork([] { get().mutex_.lock(); }, [] { get().mutex_.unlock(); },
                   [] {
                     get().mutex_.unlock();
                     get().watched_.clear();  // the parent's endpoints are not the child's to watch
                   });
  }

  void loop() {
    for (;;) {
      std::this_thread::sleep_for(kTick);
      std::lock_guard<std::mutex> lock(mutex_);
      if (threadPid_ != ::getpid()) return;
      Clock::time_point now = Clock::now();
      for (Seen& s : watched_) look(s, now);
    }
  }

  void look(Seen& s, Clock::time_point now) {
    CallWatch& w = *s.watch;
    uint64_t word = w.word_.load(std::memory_order_acquire);
    bool inCall = (word & 1) != 0, asked = (word & 2) != 0;
    if (word != s.word || !inCall || asked) {
      s.word = word;
      s.since = now;
      return;
    }
    auto stuckFor = std::chrono::duration_cast<std::chrono::milliseconds>(now - s.since);
    std::string why = w.whyEscape(stuckFor);
    if (why.empty() || !canSignal_) return;
    std::snprintf(w.reason_, sizeof(w.reason_), "%s", why.c_str());
    if (!w.word_.compare_exchange_strong(word, word | 2, std::memory_order_acq_rel)) return;  // it returned
    STRATA_WARN("%s: jumping out of the call", w.reason_);
    pthread_kill(w.thread_.load(std::memory_order_acquire), escapeSignal());
  }

  std::mutex mutex_;
  std::vector<Seen> watched_;
  pid_t threadPid_ = 0;
  bool canSignal_ = false;
};

CallWatch::CallWatch(std::string owner, std::chrono::milliseconds limit)
    : owner_(std::move(owner)), limit_(limit) {
  CallWatchdog::get().add(this);
}

CallWatch::~CallWatch() { CallWatchdog::get().remove(this); }

void CallWatch::watchPeerProcess(pid_t pid, int rank) {
  if (pid <= 0 || pid == ::getpid()) return;
  std::lock_guard<std::mutex> lock(peersMutex_);
  peers_.emplace_back(pid, rank);
}

void CallWatch::enter() {
  thread_.store(pthread_self(), std::memory_order_relaxed);
  tActive = this;
  word_.store((++calls_ << 2) | 1, std::memory_order_release);
}

void CallWatch::leave() {
  word_.store(calls_ << 2, std::memory_order_release);
  tActive = nullptr;
}

void CallWatch::onSignal(int) {
  CallWatch* w = tActive;
  if (!w) return;  // the call returned before the signal came
  uint64_t word = w->word_.load(std::memory_order_acquire);
  if ((word & 3) == 3) siglongjmp(w->jump_, 1);
}

void CallWatch::escaped(const char* what) {
  // The handler ran with the signal blocked, and the jump kept that mask.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, escapeSignal());
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  tActive = nullptr;
  word_.store(calls_ << 2, std::memory_order_release);
  abandoned_.store(true, std::memory_order_release);
  fail(strataRemoteError, "%s (%s); the endpoint is abandoned", reason_, what);
}

void CallWatch::failAbandoned(const char* what) const {
  fail(strataRemoteError, "%s: %s cannot be used after a call into it never returned (%s)", what, owner_.c_str(),
       reason_);
}

std::string CallWatch::whyEscape(std::chrono::milliseconds stuckFor) {
  if (stuckFor >= limit_)
    return format("a call into %s has not returned for %lld ms (the timeout)", owner_.c_str(),
                  static_cast<long long>(stuckFor.count()));
  if (stuckFor < kStuckAfter) return {};
  // The rank the call addresses when it is gone; otherwise every gone rank
  // (a completion-queue read does not say which peer it waits on).
  std::lock_guard<std::mutex> lock(peersMutex_);
  const int target = target_.load(std::memory_order_relaxed);
  std::string gone;
  for (const auto& [pid, rank] : peers_) {
    if (!processGone(pid)) continue;
    std::string one = format("rank %d (pid %d)", rank, int(pid));
    if (rank == target) {
      gone = one;
      break;
    }
    gone += (gone.empty() ? "" : ", ") + one;
  }
  if (gone.empty()) return {};
  return format("%s is gone, and a call into %s has spun for %lld ms (the shm provider waits for good on a lock "
                "that a process killed in its shared memory left held)",
                gone.c_str(), owner_.c_str(), static_cast<long long>(stuckFor.count()));
}

}  // namespace strata
