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
  for (const auto& kv : spec.env) setenv(kv.first.c_str(), kv.second.c_str(), 1);
  strataUniqueId id;
  strataResult_t rc = strataGetUniqueId(&id);
  for (const auto& kv : spec.env) unsetenv(kv.first.c_str());
  if (rc != strataSuccess) {
    std::fprintf(stderr, "strataGetUniqueId failed: %s\n", strataGetLastError(nullptr));
    return out;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> pids;
  for (int r = 0; r < spec.nranks; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      for (const auto& kv : spec.env) setenv(kv.first.c_str(), kv.second.c_str(), 1);
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
