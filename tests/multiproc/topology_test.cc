// Topology through the public API: STRATA_TOPO_FILE places ranks of this host
// on pretend nodes (3 + 1) so the hierarchical algorithms run over real
// transports; STRATA_TOPO_DUMP_FILE writes what the communicator used; a bad
// file or bad link parameters fail init with strataInvalidArgument and a
// sentence naming the problem.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "support/collective_cases.h"
#include "support/ranks.h"
#include "topo/topo_json.h"

namespace strata {
namespace {

std::string tempPath(const char* what) {
  return "/tmp/strata_" + std::to_string(getpid()) + "_" + what;
}

void writeFile(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

const char* kThreePlusOne =
    R"({"ranks": [{"node": 0}, {"node": 0}, {"node": 1}, {"node": 0}],
        "links": {"intra": {"alpha_us": 1.5, "gbps": 8}, "inter": {"alpha_us": 20, "gbps": 0.5}}})";

class TopoFileAlgorithms : public ::testing::TestWithParam<const char*> {};

TEST_P(TopoFileAlgorithms, EveryCollectiveOnPretendNodesMatchesReference) {
  const std::string topo = tempPath("topo.json"), dump = tempPath("dump_%r.json");
  writeFile(topo, kThreePlusOne);
  test::RankSpec spec;
  spec.nranks = 4;
  spec.env = {{"STRATA_TOPO_FILE", topo}, {"STRATA_TOPO_DUMP_FILE", dump}, {"STRATA_ALGO", GetParam()},
              {"STRATA_TIMEOUT_MS", "60000"}};
  spec.deadlineSec = 300;
  auto outcomes = test::runRanks(spec, [](int rank, int n, strataComm_t comm, const strataUniqueId&) {
    std::vector<test::Case> cases = test::allCases();
    int problems = 0;
    for (size_t i = 0; i < cases.size(); ++i) {
      std::string err = test::runCase(cases[i], i, rank, n, comm);
      if (!err.empty()) {
        std::fprintf(stderr, "rank %d case %zu %s: %s\n", rank, i, test::describeCase(cases[i]).c_str(),
                     err.c_str());
        if (++problems > 5 || err.find("returned") == 0) return problems;
      }
    }
    return problems;
  });
  EXPECT_TRUE(test::allSucceeded(outcomes)) << test::describe(outcomes);
  for (int r = 0; r < 4; ++r) {  // each rank dumped what it used: the file's placement and links
    std::string path = tempPath(("dump_" + std::to_string(r) + ".json").c_str());
    Topology t = readTopologyFile(path, 4);
    EXPECT_EQ(t.nnodes(), 2) << path;
    EXPECT_EQ(t.node(0), (std::vector<int>{0, 1, 3})) << path;
    EXPECT_DOUBLE_EQ(t.inter.gbps, 0.5) << path;
    std::remove(path.c_str());
  }
  std::remove(topo.c_str());
}

INSTANTIATE_TEST_SUITE_P(Forced, TopoFileAlgorithms, ::testing::Values("hier", "hier_tree", ""),
                         [](const auto& info) { return std::string(info.param[0] ? info.param : "auto"); });

// Init with `env` must fail on every rank with strataInvalidArgument and a
// last-error sentence containing `phrase`.
void expectInitFails(const test::Env& env, const char* phrase) {
  test::RankSpec spec;
  spec.nranks = 3;
  spec.env = env;
  spec.initComm = false;
  spec.deadlineSec = 60;
  const std::string want = phrase;
  auto outcomes = test::runRanks(spec, [&](int rank, int n, strataComm_t, const strataUniqueId& id) {
    int problems = 0;
    strataComm_t comm = nullptr;
    strataResult_t rc = strataCommInitRank(&comm, n, id, rank);
    RANK_EXPECT(rc == strataInvalidArgument, "init returned %s", strataGetErrorString(rc));
    std::string msg = strataGetLastError(nullptr);
    RANK_EXPECT(msg.find(want) != std::string::npos, "last error '%s' lacks '%s'", msg.c_str(), want.c_str());
    if (comm) strataCommDestroy(comm);
    return problems;
  });
  EXPECT_TRUE(test::allSucceeded(outcomes)) << test::describe(outcomes);
}

TEST(TopoFileErrors, WrongRankCountFailsInitWithASentence) {
  const std::string topo = tempPath("bad_topo.json");
  writeFile(topo, R"({"ranks": [{"node": 0}, {"node": 1}]})");
  expectInitFails({{"STRATA_TOPO_FILE", topo}}, "describes 2 ranks but the communicator has 3");
  std::remove(topo.c_str());
}

TEST(TopoFileErrors, MissingFileFailsInitWithASentence) {
  expectInitFails({{"STRATA_TOPO_FILE", "/nonexistent/topo.json"}}, "cannot read the topology file");
}

TEST(TopoFileErrors, BadLinkParametersFailInitWithASentence) {
  expectInitFails({{"STRATA_INTER_LINK", "fast"}}, "STRATA_INTER_LINK='fast' must be");
}

}  // namespace
}  // namespace strata
