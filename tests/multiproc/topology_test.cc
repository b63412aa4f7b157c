// Topology through the public API: STRATA_TOPO_FILE places ranks of this host
// on pretend nodes (3 + 1, and 2 + 1 + 2 interleaved) so the hierarchical and
// log-step algorithms run forced over real transports (shm, tcp); STRATA_TOPO_DUMP_FILE writes what the communicator used
// (with whether its ranks outnumber this machine's CPUs, learned in the rendezvous); a bad
// file or bad link parameters fail init with strataInvalidArgument and a
// sentence naming the problem.
#include <gtest/gtest.h>
#include <sched.h>
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

const char* kThreeNodesUneven =  // 2 + 1 + 2 ranks, interleaved: columns are not evenly spaced
    R"({"ranks": [{"node": 0}, {"node": 1}, {"node": 2}, {"node": 0}, {"node": 2}],
        "links": {"intra": {"alpha_us": 1.5, "gbps": 8}, "inter": {"alpha_us": 20, "gbps": 0.5}}})";

// Two nodes of two ranks, interleaved, whose network has two rails: the flat
// pairwise all-to-all goes node by node there (all_to_all/pairwise.cc).
const char* kTwoByTwoRails =
    R"({"ranks": [{"node": 0}, {"node": 1}, {"node": 0}, {"node": 1}],
        "links": {"intra": {"alpha_us": 1.5, "gbps": 8}, "inter": {"alpha_us": 20, "gbps": 0.5, "rails": 2}}})";

// 3 + 1 again, with an NVLink-class link inside a node: the rings there take
// slices of up to half a link's buffering (nodeRingSliceBytes), 2 MiB by
// default, instead of the 512 KiB chunk; the large cases move 1 MiB column
// blocks, and 4 MiB parts of the all-reduce, inside a node.
const char* kThreePlusOneFastInside =
    R"({"ranks": [{"node": 0}, {"node": 0}, {"node": 1}, {"node": 0}],
        "links": {"intra": {"alpha_us": 2, "gbps": 450}, "inter": {"alpha_us": 20, "gbps": 0.5}}})";

// Three equal nodes of two ranks: the hierarchical all-gathers fan each
// column out inside its node beside the exchange across nodes
// (algo/hierarchical/node_fanout.h); a fast link inside, as where that pays.
const char* kThreeByTwo =
    R"({"ranks": [{"node": 0}, {"node": 0}, {"node": 1}, {"node": 1}, {"node": 2}, {"node": 2}],
        "links": {"intra": {"alpha_us": 2, "gbps": 450}, "inter": {"alpha_us": 20, "gbps": 0.5}}})";

// What each file places: ranks, nodes, node 0's ranks.
struct Placement {
  int n, nodes;
  std::vector<int> node0;
};
Placement placementOf(const char* topo) {
  if (topo == kThreePlusOne || topo == kThreePlusOneFastInside) return {4, 2, {0, 1, 3}};
  if (topo == kTwoByTwoRails) return {4, 2, {0, 2}};
  if (topo == kThreeByTwo) return {6, 3, {0, 1}};
  return {5, 3, {0, 3}};  // kThreeNodesUneven
}

struct Forced {
  const char* algo;       // STRATA_ALGO ("" = the cost model)
  const char* transport;  // STRATA_TRANSPORT
  const char* topo;       // one of the files above
  const char* label;
};

class TopoFileAlgorithms : public ::testing::TestWithParam<Forced> {};

TEST_P(TopoFileAlgorithms, EveryCollectiveOnPretendNodesMatchesReference) {
  const Forced f = GetParam();
  const Placement place = placementOf(f.topo);
  const int n = place.n;
  const std::string topo = tempPath("topo.json"), dump = tempPath("dump_%r.json");
  writeFile(topo, f.topo);
  test::RankSpec spec;
  spec.nranks = n;
  spec.env = {{"STRATA_TOPO_FILE", topo}, {"STRATA_TOPO_DUMP_FILE", dump}, {"STRATA_ALGO", f.algo},
              {"STRATA_TRANSPORT", f.transport}, {"STRATA_TIMEOUT_MS", "60000"}};
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
  // The ranks run where this process may (forked from it): they share its CPUs.
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  ASSERT_EQ(sched_getaffinity(0, sizeof cpus, &cpus), 0);
  const bool outnumbered = n > CPU_COUNT(&cpus);
  for (int r = 0; r < n; ++r) {  // each rank dumped what it used: the file's placement and links
    std::string path = tempPath(("dump_" + std::to_string(r) + ".json").c_str());
    Topology t = readTopologyFile(path, n);
    EXPECT_EQ(t.nnodes(), place.nodes) << path;
    EXPECT_EQ(t.node(0), place.node0) << path;
    EXPECT_DOUBLE_EQ(t.inter.gbps, 0.5) << path;
    EXPECT_FALSE(t.inter.gapKnown) << path;  // the file gives no gap
    // Every rank learned in the rendezvous where the others run: one machine, one CPU set.
    EXPECT_EQ(t.coresShared, outnumbered) << path << ": " << n << " ranks, " << CPU_COUNT(&cpus) << " CPUs";
    std::remove(path.c_str());
  }
  std::remove(topo.c_str());
}

// The log-step algorithms (hier_halving; recursive_doubling, which names
// recursive_halving for reduce-scatter and bruck for all-to-all), the radix-k ones (hier_radix:
// reduce-scatter and all-gather) and the hierarchical rings, forced
// over shared memory and TCP, on uneven nodes and a node count that is not
// a power of two; the flat pairwise all-to-all in its node-by-node order; and
// the rings inside a node in slices longer than the chunk (a fast link there);
// the all-gathers' fan-out inside equal nodes, across nodes by each shape.
INSTANTIATE_TEST_SUITE_P(
    Forced, TopoFileAlgorithms,
    ::testing::Values(Forced{"hier", "shm", kThreePlusOne, "hier"}, Forced{"hier_tree", "shm", kThreePlusOne, "hier_tree"},
                      Forced{"", "shm", kThreePlusOne, "auto"},
                      Forced{"hier_halving", "shm", kThreePlusOne, "hier_halving_shm"},
                      Forced{"hier_halving", "tcp", kThreeNodesUneven, "hier_halving_tcp_3nodes"},
                      Forced{"hier_halving", "shm", kThreeNodesUneven, "hier_halving_shm_3nodes"},
                      Forced{"recursive_doubling", "shm", kThreeNodesUneven, "log_flat_shm_3nodes"},
                      Forced{"recursive_doubling", "tcp", kThreePlusOne, "log_flat_tcp"},
                      Forced{"hier_ring", "tcp", kThreeNodesUneven, "hier_ring_tcp_3nodes"},
                      Forced{"hier_radix", "tcp", kThreeNodesUneven, "hier_radix_tcp_3nodes"},
                      Forced{"hier_radix", "shm", kThreePlusOne, "hier_radix_shm"},
                      Forced{"", "tcp", kThreeNodesUneven, "auto_tcp_3nodes"},
                      Forced{"pairwise", "tcp", kTwoByTwoRails, "pairwise_node_by_node_tcp"},
                      Forced{"pairwise", "shm", kTwoByTwoRails, "pairwise_node_by_node_shm"},
                      Forced{"hier_ring", "shm", kThreePlusOneFastInside, "hier_ring_fast_inside_shm"},
                      Forced{"hier_radix", "tcp", kThreePlusOneFastInside, "hier_radix_fast_inside_tcp"},
                      Forced{"hier_radix", "shm", kThreeByTwo, "hier_radix_equal_nodes_shm"},
                      Forced{"hier_halving", "tcp", kThreeByTwo, "hier_halving_equal_nodes_tcp"},
                      Forced{"hier_ring", "tcp", kThreeByTwo, "hier_ring_equal_nodes_tcp"}),
    [](const auto& info) { return std::string(info.param.label); });

// Pretend nodes whose file gives no link parameters: init measures them (the
// link probe) and every rank uses the same figures. The hop inside a node is
// measured unless STRATA_INTRA_LINK sets it; the share of latency the network
// hides is a fraction; collectives still match the reference.
TEST(LinkProbe, MeasuresTheNetworkAndTheHopInsideANodeOnPretendNodes) {
  const std::string topo = tempPath("probe_topo.json"), dump = tempPath("probe_dump_%r.json");
  writeFile(topo, R"({"ranks": [{"node": 0}, {"node": 0}, {"node": 1}, {"node": 1}, {"node": 1}]})");
  for (const char* intra : {"", "2.5,9"}) {
    test::RankSpec spec;
    spec.nranks = 5;
    spec.env = {{"STRATA_TOPO_FILE", topo}, {"STRATA_TOPO_DUMP_FILE", dump}, {"STRATA_TIMEOUT_MS", "60000"}};
    if (*intra) spec.env["STRATA_INTRA_LINK"] = intra;
    spec.deadlineSec = 120;
    auto outcomes = test::runRanks(spec, [](int rank, int n, strataComm_t comm, const strataUniqueId&) {
      std::vector<test::Case> cases = test::allCases();
      int problems = 0;
      for (size_t i = 0; i < cases.size(); i += 7) {  // a sample of the cases: the probe is what is tested
        std::string err = test::runCase(cases[i], i, rank, n, comm);
        if (!err.empty() && ++problems)
          std::fprintf(stderr, "rank %d case %s: %s\n", rank, test::describeCase(cases[i]).c_str(), err.c_str());
      }
      return problems;
    });
    EXPECT_TRUE(test::allSucceeded(outcomes)) << intra << ": " << test::describe(outcomes);
    std::vector<double> intraAlpha, interAlpha, hidden;
    for (int r = 0; r < 5; ++r) {
      const std::string path = tempPath(("probe_dump_" + std::to_string(r) + ".json").c_str());
      std::stringstream text;
      text << std::ifstream(path).rdbuf();
      EXPECT_NE(text.str().find("\"source\": \"measured\""), std::string::npos) << path;
      EXPECT_EQ(text.str().find("measured latency") != std::string::npos, *intra == '\0') << path;
      Topology t = readTopologyFile(path, 5);
      intraAlpha.push_back(t.intra.alphaUs);
      interAlpha.push_back(t.inter.alphaUs);
      hidden.push_back(t.inter.latencyHidden);
      std::remove(path.c_str());
    }
    for (int r = 0; r < 5; ++r) {  // shared: every rank chooses alike
      EXPECT_EQ(intraAlpha[size_t(r)], intraAlpha[0]);
      EXPECT_EQ(interAlpha[size_t(r)], interAlpha[0]);
      EXPECT_EQ(hidden[size_t(r)], hidden[0]);
    }
    if (*intra) EXPECT_DOUBLE_EQ(intraAlpha[0], 2.5);
    else EXPECT_GT(intraAlpha[0], 0);
    EXPECT_GT(interAlpha[0], 0);
    EXPECT_GE(hidden[0], 0);
    EXPECT_LE(hidden[0], 1);
  }
  std::remove(topo.c_str());
}

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
