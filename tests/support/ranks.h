// The multi-process fixture: forks one process per rank, each with its own
// environment overrides, and collects their exit codes. A rank's body returns
// the number of problems it found (printed to stderr); the parent asserts on
// the codes. Ranks still running at the deadline are killed and reported.
#pragma once

#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "strata/strata.h"

// Inside a rank body (variables `rank` and `problems` in scope): prints the
// failed condition with a message to stderr and counts a problem.
#define RANK_EXPECT(cond, ...)                            \
  do {                                                    \
    if (!(cond)) {                                        \
      std::fprintf(stderr, "rank %d: %s: ", rank, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                  \
      std::fprintf(stderr, "\n");                         \
      ++problems;                                         \
    }                                                     \
  } while (0)

namespace strata::test {

struct RankOutcome {
  int exitCode = -1;   // the body's return value (capped at 100), or 128+signal
  bool killed = false; // killed by the fixture at the deadline
};

using Env = std::map<std::string, std::string>;
// body(rank, nranks, comm): comm is initialised with `env` applied (unless
// initComm is false, then comm is NULL and the body inits itself with id).
struct RankSpec {
  int nranks = 2;
  Env env;
  bool initComm = true;
  int deadlineSec = 120;
};
using RankBody = std::function<int(int rank, int nranks, strataComm_t comm, const strataUniqueId& id)>;
std::vector<RankOutcome> runRanks(const RankSpec& spec, const RankBody& body);

// Formats "rank 0: exit 0, rank 1: exit 3 ..." for assertion messages.
std::string describe(const std::vector<RankOutcome>& outcomes);
bool allSucceeded(const std::vector<RankOutcome>& outcomes);

}  // namespace strata::test
