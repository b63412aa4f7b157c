// A way out of a libfabric call that will never return.
//
// libfabric's shm provider (1.17, Debian 12) takes a spin lock that lives in
// the peer's shared-memory region before it writes a command there. A peer
// killed while it holds that lock leaves it held for good, and the next
// fi_tsend to that peer spins forever: no error, no timeout. The liveness
// socket that tells the rest of strata "rank N is gone" is never read again.
//
// A CallWatch guards each call into the provider of one endpoint. A watchdog
// thread (one per process) looks at every watched endpoint ten times a second;
// when one call has lasted `kStuckAfter` while a local peer process of that
// endpoint has died, or has lasted the communicator's timeout, it sends the
// calling thread a signal whose handler jumps back out of the call. The call
// then fails with strataRemoteError and the endpoint is abandoned: its locks
// may be held by the frames that were jumped over, so it is never called or
// closed again (its memory and region are left to the process's exit).
#pragma once

#include <pthread.h>
#include <setjmp.h>
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace strata {

// True when process `pid` no longer runs: gone, or a zombie not yet reaped.
bool processGone(pid_t pid);

class CallWatch {
 public:
  // `owner` names the endpoint in errors ("libfabric shm"); `limit` is the
  // longest any single call may take (the communicator's timeout).
  CallWatch(std::string owner, std::chrono::milliseconds limit);
  ~CallWatch();
  CallWatch(const CallWatch&) = delete;
  CallWatch& operator=(const CallWatch&) = delete;

  // A peer process on this host: its death makes a long call stuck.
  void watchPeerProcess(pid_t pid, int rank);

  // True after a call was jumped out of: nothing may use the endpoint again.
  bool abandoned() const { return abandoned_.load(std::memory_order_acquire); }

  // Runs `call` (a lambda around one provider call, returning its integer
  // result); `peerRank` is the rank it addresses, or -1. Throws
  // strataRemoteError if the watchdog had to jump out of it, or if the
  // endpoint was abandoned earlier.
  template <class Call>
  auto run(const char* what, int peerRank, Call&& call) -> decltype(call()) {
    if (abandoned()) failAbandoned(what);
    if (sigsetjmp(jump_, 0) != 0) escaped(what);
    target_.store(peerRank, std::memory_order_relaxed);
    enter();
    auto result = call();
    leave();
    return result;
  }

 private:
  friend class CallWatchdog;
  void enter();
  void leave();
  [[noreturn]] void escaped(const char* what);
  [[noreturn]] void failAbandoned(const char* what) const;
  // Called by the watchdog: the reason to jump out of the current call, or
  // an empty string. `stuckFor` is how long it has lasted.
  std::string whyEscape(std::chrono::milliseconds stuckFor);
  static void onSignal(int);

  // Bit 0: in a call; bit 1: the watchdog asked to jump out; above: the call's
  // sequence number, so a request never hits a later call.
  std::atomic<uint64_t> word_{0};
  uint64_t calls_ = 0;  // the calling thread's count
  std::atomic<pthread_t> thread_{};
  std::atomic<int> target_{-1};  // the rank the current call addresses, or -1
  sigjmp_buf jump_;
  std::atomic<bool> abandoned_{false};
  const std::string owner_;
  const std::chrono::milliseconds limit_;
  std::mutex peersMutex_;
  std::vector<std::pair<pid_t, int>> peers_;  // (pid, rank)
  char reason_[256] = "";                     // written by the watchdog before it signals
};

}  // namespace strata
