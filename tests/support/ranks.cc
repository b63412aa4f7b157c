#include "support/ranks.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "core/error.h"

namespace strata::test {

std::vector<RankOutcome> runRanks(const RankSpec& spec, const RankBody& body) {
  std::vector<RankOutcome> out(size_t(spec.nranks));
  std::fflush(stdout);
  std::fflush(stderr);
  // A rank's whole life in its child process.
  auto rankMain = [&](int r, const strataUniqueId& id) {
    strataComm_t comm = nullptr;
    if (spec.initComm) {
      strataResult_t irc = strataCommInitRank(&comm, spec.nranks, id, r);
      if (irc != strataSuccess) {
        std::fprintf(stderr, "rank %d: init failed: %s\n", r, strataGetLastError(nullptr));
        std::fflush(stderr);
        _exit(100);
      }
    }
    int problems = body(r, spec.nranks, comm, id);
    if (comm) strataCommDestroy(comm);
    std::fflush(stdout);
    std::fflush(stderr);
    _exit(problems > 100 ? 100 : problems);
  };
  // A helper process makes the unique id (so it hosts the bootstrap root
  // thread, for as long as the ranks run) and sends it here. The parent never
  // runs a strata thread itself, so no rank is forked while another thread
  // holds a lock (the child would inherit it locked).
  int idPipe[2], holdPipe[2];
  if (pipe(idPipe) != 0) return out;
  if (pipe(holdPipe) != 0) return out;
  pid_t rootHost = fork();
  if (rootHost == 0) {
    ::close(idPipe[0]);
    ::close(holdPipe[1]);
    for (const auto& kv : spec.env) setenv(kv.first.c_str(), kv.second.c_str(), 1);
    strataUniqueId id;
    bool ok = strataGetUniqueId(&id) == strataSuccess;
    if (!ok) std::fprintf(stderr, "strataGetUniqueId failed: %s\n", strataGetLastError(nullptr));
    if (ok) (void)!::write(idPipe[1], &id, sizeof(id));
    ::close(idPipe[1]);
    char b;
    while (::read(holdPipe[0], &b, 1) > 0) {
    }  // until the parent closes its end: the ranks are done
    _exit(0);
  }
  ::close(idPipe[1]);
  ::close(holdPipe[0]);
  strataUniqueId id;
  size_t got = 0;
  while (got < sizeof(id)) {
    ssize_t r = ::read(idPipe[0], reinterpret_cast<char*>(&id) + got, sizeof(id) - got);
    if (r <= 0) break;
    got += size_t(r);
  }
  ::close(idPipe[0]);
  auto releaseRootHost = [&] {
    ::close(holdPipe[1]);
    waitpid(rootHost, nullptr, 0);
  };
  if (got != sizeof(id)) {
    releaseRootHost();
    return out;
  }
  std::vector<pid_t> pids;
  for (int r = 0; r < spec.nranks; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      ::close(holdPipe[1]);
      for (const auto& kv : spec.env) setenv(kv.first.c_str(), kv.second.c_str(), 1);
      rankMain(r, id);
    }
    pids.push_back(pid);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(spec.deadlineSec);
  size_t left = pids.size();
  while (left > 0) {
    for (size_t r = 0; r < pids.size(); ++r) {
      if (pids[r] == 0) continue;
      int status = 0;
      pid_t got = waitpid(pids[r], &status, WNOHANG);
      if (got == pids[r]) {
        out[r].exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        pids[r] = 0;
        --left;
      }
    }
    if (left == 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      for (size_t r = 0; r < pids.size(); ++r) {
        if (pids[r] == 0) continue;
        kill(pids[r], SIGKILL);
        waitpid(pids[r], nullptr, 0);
        out[r].killed = true;
        out[r].exitCode = 128 + SIGKILL;
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  releaseRootHost();
  return out;
}

std::string describe(const std::vector<RankOutcome>& outcomes) {
  std::string s;
  for (size_t r = 0; r < outcomes.size(); ++r)
    s += format("%srank %zu: exit %d%s", r ? ", " : "", r, outcomes[r].exitCode,
                outcomes[r].killed ? " (killed at the deadline: hung)" : "");
  return s;
}

bool allSucceeded(const std::vector<RankOutcome>& outcomes) {
  for (const RankOutcome& o : outcomes)
    if (o.exitCode != 0) return false;
  return !outcomes.empty();
}

}  // namespace strata::test
