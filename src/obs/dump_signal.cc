#include "obs/dump_signal.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>
#include <thread>

#include "core/log.h"

namespace strata {

namespace {

int gPipe[2] = {-1, -1};

void onSignal(int) {
  int saved = errno;
  char b = 1;
  (void)!::write(gPipe[1], &b, 1);
  errno = saved;
}

}  // namespace

void installDumpSignal(void (*dumpAll)()) {
  static std::once_flag once;
  std::call_once(once, [dumpAll] {
    struct sigaction current;
    if (sigaction(SIGUSR1, nullptr, &current) != 0) return;
    bool isDefault = !(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_DFL;
    if (!isDefault) {
      STRATA_INFO("SIGUSR1 already has a handler: the flight recorder is not dumped on it");
      return;
    }
    if (::pipe2(gPipe, O_CLOEXEC) != 0) return;
    std::thread([dumpAll] {
      char b;
      for (;;) {
        ssize_t r = ::read(gPipe[0], &b, 1);
        if (r == 1) dumpAll();
        else if (r < 0 && errno == EINTR) continue;
        else return;
      }
    }).detach();
    struct sigaction sa = {};
    sa.sa_handler = onSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, nullptr);
  });
}

}  // namespace strata
