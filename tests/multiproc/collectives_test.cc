// Every collective x dtype x op x count (0, 1, 7, 1023; 1048579 for a
// representative subset) x in-place / out-of-place, with unaligned buffers,
// on world sizes 1, 2, 3, 4, 5, 8, over shm (and shm single copy on 2 and 5; streaming stores into
// every final output on 3, on 2 through the ring alone, and over TCP on 2) and over forced TCP, and on 2, 3
// and 4 ranks over libfabric (tcp and shm providers, one and two rails) and
// UCX (tcp and shared memory), in real processes through the public C API. Every rank regenerates all ranks'
// random inputs and checks its output against the float64 reference.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "support/collective_cases.h"
#include "support/ranks.h"
#include "support/reference.h"

namespace strata {
namespace {

struct Scenario {
  int nranks;
  const char* transport;
  int tcpSockets = 2;
  // One more setting for the library underneath (FI_PROVIDER, UCX_TLS, ...).
  const char* variable = nullptr;
  const char* value = nullptr;
  const char* label = nullptr;  // test-name suffix
  const char* variable2 = nullptr;  // and one more
  const char* value2 = nullptr;
};

class Collectives : public ::testing::TestWithParam<Scenario> {};

TEST_P(Collectives, EveryCollectiveDtypeOpCountAndPlacementMatchesReference) {
  const Scenario s = GetParam();
  test::RankSpec spec;
  spec.nranks = s.nranks;
  spec.env = {{"STRATA_TRANSPORT", s.transport}, {"STRATA_TIMEOUT_MS", "60000"},
              {"STRATA_TCP_SOCKETS", std::to_string(s.tcpSockets)}};
  if (s.variable) spec.env[s.variable] = s.value;
  if (s.variable2) spec.env[s.variable2] = s.value2;
  spec.deadlineSec = 400;
  auto outcomes = test::runRanks(spec, [](int rank, int n, strataComm_t comm, const strataUniqueId&) {
    std::vector<test::Case> cases = test::allCases();
    int problems = 0;
    for (size_t i = 0; i < cases.size(); ++i) {
      const test::Case& c = cases[i];
      std::string err = test::runCase(c, i, rank, n, comm);
      if (!err.empty()) {
        std::fprintf(stderr, "rank %d case %zu %s: %s\n", rank, i, test::describeCase(c).c_str(),
                     err.c_str());
        if (++problems > 5 || err.find("returned") == 0) return problems;
      }
    }
    return problems;
  });
  EXPECT_TRUE(test::allSucceeded(outcomes)) << test::describe(outcomes);
}

INSTANTIATE_TEST_SUITE_P(WorldSizesAndTransports, Collectives,
                         ::testing::Values(Scenario{1, "shm"}, Scenario{2, "shm"}, Scenario{3, "shm"},
                                           Scenario{4, "shm"}, Scenario{5, "shm"}, Scenario{8, "shm"},
                                           // shm single copy for every packet it may lend
                                           Scenario{2, "shm", 2, "STRATA_SHM_SINGLE_COPY_BYTES", "1", "single_copy"},
                                           Scenario{5, "shm", 2, "STRATA_SHM_SINGLE_COPY_BYTES", "1", "single_copy"},
                                           // every output the plans do not read again in streaming stores
                                           Scenario{3, "shm", 2, "STRATA_STREAM_OUTPUT_BYTES", "1", "streamed_outputs"},
                                           // the same through the ring alone: a rank's own block goes into
                                           // the ring and into place in one pass (kernels/cpu/dual_copy.h)
                                           Scenario{2, "shm", 2, "STRATA_STREAM_OUTPUT_BYTES", "1", "streamed_outputs_ring",
                                                    "STRATA_SHM_SINGLE_COPY", "0"},
                                           Scenario{2, "tcp", 2, "STRATA_STREAM_OUTPUT_BYTES", "1", "streamed_outputs"},
                                           Scenario{2, "tcp"}, Scenario{3, "tcp"}, Scenario{5, "tcp"},
                                           Scenario{8, "tcp"}, Scenario{3, "tcp", 1}, Scenario{4, "tcp", 4},
                                           Scenario{2, "ofi", 2, "FI_PROVIDER", "tcp", "tcp"},
                                           Scenario{3, "ofi", 2, "FI_PROVIDER", "tcp", "tcp"},
                                           Scenario{4, "ofi", 2, "FI_PROVIDER", "tcp", "tcp"},
                                           Scenario{3, "ofi", 2, "STRATA_OFI_RAILS", "2", "tcp_2rails"},
                                           Scenario{3, "ofi", 2, "FI_PROVIDER", "shm", "shm"},
                                           Scenario{2, "ucx", 2, "UCX_TLS", "tcp", "tcp"},
                                           Scenario{3, "ucx", 2, "UCX_TLS", "tcp", "tcp"},
                                           Scenario{4, "ucx", 2, "UCX_TLS", "tcp", "tcp"},
                                           Scenario{3, "ucx", 2, "UCX_TLS", "sm,self", "sm"}),
                         [](const auto& info) {
                           std::string name = std::string(info.param.transport) + "_" +
                                              std::to_string(info.param.nranks) + "ranks";
                           if (std::string(info.param.transport) == "tcp")
                             name += "_" + std::to_string(info.param.tcpSockets) + "sockets";
                           if (info.param.label) name += std::string("_") + info.param.label;
                           return name;
                         });

}  // namespace
}  // namespace strata
