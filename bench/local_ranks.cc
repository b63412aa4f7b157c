#include "local_ranks.h"

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

// With no more ranks than cores, rank r runs on the r-th core this process
// may use, so ranks never share a core by accident.
void bindToCore(int rank, int nprocs) {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return;
  if (nprocs > CPU_COUNT(&allowed)) return;
  int seen = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    if (seen++ == rank) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      sched_setaffinity(0, sizeof(one), &one);
      return;
    }
  }
}

}  // namespace

int runLocalRanks(int nprocs, bool bind, const std::function<int(int, strataComm_t)>& body) {
  strataUniqueId id;
  if (strataGetUniqueId(&id) != strataSuccess) {
    std::fprintf(stderr, "strataGetUniqueId failed: %s\n", strataGetLastError(nullptr));
    return 3;
  }
  std::vector<pid_t> kids;
  for (int r = 0; r < nprocs; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      if (bind) bindToCore(r, nprocs);
      strataComm_t comm;
      if (strataCommInitRank(&comm, nprocs, id, r) != strataSuccess) {
        std::fprintf(stderr, "rank %d: strataCommInitRank failed: %s\n", r, strataGetLastError(nullptr));
        std::_Exit(3);
      }
      std::_Exit(body(r, comm));  // _Exit: the body flushes what it printed
    }
    kids.push_back(pid);
  }
  int worst = 0;
  for (pid_t pid : kids) {
    int status = 0;
    waitpid(pid, &status, 0);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    worst = std::max(worst, code);
  }
  return worst;
}
