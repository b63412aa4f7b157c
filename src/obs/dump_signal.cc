#include "obs/dump_signal.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <mutex>
#include <thread>

#include "core/log.h"

namespace strata {

namespace {

// The pipe's write end, which the handler writes to; its read end; and the
// process whose dump thread reads that (0: none yet).
std::atomic<int> gWriteEnd{-1};
int gReadEnd = -1;
pid_t gReaderProcess = 0;
std::mutex gInstallMutex;

void onSignal(int) {
  int saved = errno;
  char b = 1;
  (void)!::write(gWriteEnd.load(std::memory_order_relaxed), &b, 1);
  errno = saved;
}

}  // namespace

void installDumpSignal(void (*dumpAll)()) {
  std::lock_guard<std::mutex> lock(gInstallMutex);
  if (gReaderProcess == getpid()) return;  // decided in this process already
  gReaderProcess = getpid();
  struct sigaction current;
  if (sigaction(SIGUSR1, nullptr, &current) != 0) return;
  const bool ours = !(current.sa_flags & SA_SIGINFO) && current.sa_handler == onSignal;
  const bool isDefault = !(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_DFL;
  if (!ours && !isDefault) {
    STRATA_INFO("SIGUSR1 already has a handler: the flight recorder is not dumped on it");
    return;
  }
  // A pipe of this process's own: after a fork the inherited one is shared
  // with the parent, whose thread would take the byte and dump its own state.
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return;
  const int inherited = gWriteEnd.exchange(fds[1]);  // -1 unless forked
  if (inherited >= 0) ::close(inherited);
  if (gReadEnd >= 0) ::close(gReadEnd);
  const int readEnd = gReadEnd = fds[0];
  std::thread([dumpAll, readEnd] {
    char b;
    for (;;) {
      ssize_t r = ::read(readEnd, &b, 1);
      if (r == 1) dumpAll();
      else if (r < 0 && errno == EINTR) continue;
      else return;
    }
  }).detach();
  if (ours) return;  // the handler came with the fork
  struct sigaction sa = {};
  sa.sa_handler = onSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &sa, nullptr);
}

}  // namespace strata
