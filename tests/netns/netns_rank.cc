// One rank of the multi-host test, started by run_netns_test.sh inside a
// network namespace. It forms the communicator from the environment (RANK,
// WORLD_SIZE, STRATA_COMM_ID) and runs the whole collective matrix against
// the reference. Exit code: number of failed cases (capped at 100).
//
// With NETNS_KILL_RANK=r it tests a peer killed mid-collective instead: rank r
// kills itself 300 ms into a stream of 4 MiB all-reduces; every other rank
// must get strataRemoteError (not a hang, not a crash) within 10 s, naming a
// rank in its last error. Exit 0 when it did.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "support/collective_cases.h"
#include "strata/strata.h"

namespace {

int survivePeerDeath(strataComm_t comm, int rank, int victim) {
  using Clock = std::chrono::steady_clock;
  std::vector<float> in(1 << 20, 1.0f), out(1 << 20);
  if (rank == victim) {
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      raise(SIGKILL);
    }).detach();
  }
  for (int it = 0; it < 1000000; ++it) {
    auto start = Clock::now();
    strataResult_t rc = strataAllReduce(in.data(), out.data(), in.size(), strataFloat32, strataSum, comm, nullptr);
    if (rc == strataSuccess) continue;
    double took = std::chrono::duration<double>(Clock::now() - start).count();
    const char* why = strataGetLastError(comm);
    std::fprintf(stderr, "netns_rank %d: after the kill: %s in %.2f s: %s\n", rank,
                 strataGetErrorString(rc), took, why);
    bool ok = rc == strataRemoteError && took < 10.0 && std::strstr(why, "rank") != nullptr;
    strataCommAbort(comm);
    std::fflush(stderr);
    _exit(ok ? 0 : 1);
  }
  std::fprintf(stderr, "netns_rank %d: the victim never died\n", rank);
  return 1;
}

}  // namespace

int main() {
  strataComm_t comm = nullptr;
  if (strataCommInitFromEnv(&comm) != strataSuccess) {
    std::fprintf(stderr, "netns_rank: init failed: %s\n", strataGetLastError(nullptr));
    return 100;
  }
  int rank = 0, n = 0;
  strataCommUserRank(comm, &rank);
  strataCommCount(comm, &n);
  const char* kill = std::getenv("NETNS_KILL_RANK");
  if (kill && *kill) return survivePeerDeath(comm, rank, std::atoi(kill));
  std::vector<strata::test::Case> cases = strata::test::allCases();
  int problems = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    std::string err = strata::test::runCase(cases[i], i, rank, n, comm);
    if (!err.empty()) {
      std::fprintf(stderr, "rank %d case %zu %s: %s\n", rank, i, strata::test::describeCase(cases[i]).c_str(),
                   err.c_str());
      if (++problems >= 5 || err.find("returned") == 0) break;
    }
  }
  strataCommDestroy(comm);
  if (rank == 0) std::printf("netns_rank: %d ranks, %zu cases, %d problems on rank 0\n", n, cases.size(), problems);
  return problems > 100 ? 100 : problems;
}
