// One rank of the multi-host test, started by run_netns_test.sh inside a
// network namespace. It forms the communicator from the environment (RANK,
// WORLD_SIZE, STRATA_COMM_ID) and runs the whole collective matrix against
// the reference. Exit code: number of failed cases (capped at 100).
#include <cstdio>

#include "support/collective_cases.h"
#include "strata/strata.h"

int main() {
  strataComm_t comm = nullptr;
  if (strataCommInitFromEnv(&comm) != strataSuccess) {
    std::fprintf(stderr, "netns_rank: init failed: %s\n", strataGetLastError(nullptr));
    return 100;
  }
  int rank = 0, n = 0;
  strataCommUserRank(comm, &rank);
  strataCommCount(comm, &n);
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
