// Observability and recovery through the public C API: statistics, the
// flight recorder (timeout, SIGUSR1), traces with a straggler report, and a
// communicator that loses a rank and carries on without it (strataCommShrink).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/ranks.h"

namespace strata {
namespace {

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A fresh directory for one test's files.
std::string tempDir() {
  char tmpl[] = "/tmp/strata-obs-XXXXXX";
  const char* d = mkdtemp(tmpl);
  return d ? d : "/tmp";
}

// Small integers as floats, so sums over ranks are exact: rank r's element i
// of step `step` (an independent reference sums them in double).
float valueOf(int rank, int step, size_t i) {
  uint64_t x = (uint64_t(rank) * 1000003u + uint64_t(step) * 7919u + i) * 6364136223846793005ull + 1442695040888963407ull;
  return float(int((x >> 33) % 201) - 100);
}

int checkSum(int rank, const std::vector<int>& contributors, int step, const std::vector<float>& got,
             const char* what) {
  int problems = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double want = 0;
    for (int c : contributors) want += valueOf(c, step, i);
    if (double(got[i]) != want) {
      RANK_EXPECT(false, "%s step %d: element %zu is %g, want %g", what, step, i, double(got[i]), want);
      break;
    }
  }
  return problems;
}

TEST(Stats, CountBytesTimeAndTransportTraffic) {
  test::RankSpec spec;
  spec.nranks = 3;
  spec.env = {{"STRATA_ALGO", "ring"}};
  auto outcomes = test::runRanks(spec, [](int rank, int n, strataComm_t comm, const strataUniqueId&) {
    int problems = 0;
    const size_t count = 300007;  // prime: uneven ring blocks
    const int steps = 4;
    std::vector<float> in(count), out(count), gathered(count * size_t(n));
    double callSeconds = 0;  // the all-reduce calls as the caller times them
    for (int s = 0; s < steps; ++s) {
      for (size_t i = 0; i < count; ++i) in[i] = valueOf(rank, s, i);
      auto start = std::chrono::steady_clock::now();
      RANK_EXPECT(strataAllReduce(in.data(), out.data(), count, strataFloat32, strataSum, comm, nullptr) ==
                      strataSuccess, "all-reduce: %s", strataGetLastError(comm));
      callSeconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    RANK_EXPECT(strataAllGather(in.data(), gathered.data(), count, strataFloat32, comm, nullptr) == strataSuccess,
                "all-gather: %s", strataGetLastError(comm));
    strataStats_t st;
    RANK_EXPECT(strataCommGetStats(comm, nullptr) == strataInvalidArgument, "NULL stats accepted");
    RANK_EXPECT(strataCommGetStats(comm, &st) == strataSuccess, "%s", strataGetLastError(comm));
    const strataCollStats_t& ar = st.coll[strataStatAllReduce];
    const double bytes = double(count) * 4;
    RANK_EXPECT(ar.calls == uint64_t(steps) && ar.failed == 0, "calls %llu failed %llu",
                (unsigned long long)ar.calls, (unsigned long long)ar.failed);
    RANK_EXPECT(ar.bytes == uint64_t(steps * bytes), "bytes %llu", (unsigned long long)ar.bytes);
    RANK_EXPECT(std::fabs(ar.busBytes - steps * bytes * 2 * (n - 1) / n) < 1, "busBytes %g", ar.busBytes);
    RANK_EXPECT(ar.seconds > 0 && ar.waitSeconds >= 0 && ar.waitSeconds <= ar.seconds, "seconds %g wait %g",
                ar.seconds, ar.waitSeconds);
    // The recorded time is the calls' time less argument checks and planning.
    RANK_EXPECT(ar.seconds <= callSeconds * 1.01 + 2e-6 && ar.seconds >= 0.5 * callSeconds,
                "recorded %g s for calls that took %g s", ar.seconds, callSeconds);
    const strataCollStats_t& ag = st.coll[strataStatAllGather];
    RANK_EXPECT(ag.calls == 1 && ag.bytes == uint64_t(bytes * n), "all-gather calls %llu bytes %llu",
                (unsigned long long)ag.calls, (unsigned long long)ag.bytes);
    RANK_EXPECT(st.coll[strataStatBroadcast].calls == 0, "broadcast counted");
    // Ring all-reduce: each rank sends and receives 2(n-1)/n of the data per
    // call, all-gather (n-1)/n of the output; all over shared memory here.
    const strataTransportStats_t& shm = st.transport[strataTransportShm];
    double want = steps * bytes * 2 * (n - 1) / n + bytes * (n - 1);
    RANK_EXPECT(shm.links == 2, "shm links %llu", (unsigned long long)shm.links);
    RANK_EXPECT(std::fabs(double(shm.bytesSent) - want) < 0.01 * want, "shm sent %llu, want about %.0f",
                (unsigned long long)shm.bytesSent, want);
    RANK_EXPECT(std::fabs(double(shm.bytesReceived) - want) < 0.01 * want, "shm received %llu, want about %.0f",
                (unsigned long long)shm.bytesReceived, want);
    RANK_EXPECT(st.transport[strataTransportTcp].bytesSent == 0, "tcp traffic counted");
    return problems;
  });
  EXPECT_TRUE(test::allSucceeded(outcomes)) << test::describe(outcomes);
}

// strataCommGetPeerState: in a ring each rank receives from its predecessor
// only, so that one is seen in every operation and the others never are.
TEST(PeerState, TheLastOperationReceivedFromEachPeerAndThisRanksCount) {
  test::RankSpec spec;
  spec.nranks = 4;
  spec.env = {{"STRATA_ALGO", "ring"}};
  auto outcomes = test::runRanks(spec, [](int rank, int n, strataComm_t comm, const strataUniqueId&) {
    int problems = 0;
    strataPeerState_t st;
    RANK_EXPECT(strataCommGetPeerState(comm, (rank + 1) % n, &st) == strataSuccess && st.lastSeq == 0 &&
                    st.thisRankSeq == 0, "before any operation: last %llu, this rank %llu",
                (unsigned long long)st.lastSeq, (unsigned long long)st.thisRankSeq);
    std::vector<float> in(1009), out(in.size() * size_t(n));
    for (size_t i = 0; i < in.size(); ++i) in[i] = valueOf(rank, 0, i);
    for (int s = 0; s < 3; ++s)
      RANK_EXPECT(strataAllReduce(in.data(), out.data(), in.size(), strataFloat32, strataSum, comm, nullptr) ==
                      strataSuccess, "all-reduce: %s", strataGetLastError(comm));
    RANK_EXPECT(strataAllGather(in.data(), out.data(), in.size(), strataFloat32, comm, nullptr) == strataSuccess,
                "all-gather: %s", strataGetLastError(comm));
    const int from = (rank + n - 1) % n;  // the ring's predecessor sends this rank its data
    RANK_EXPECT(strataCommGetPeerState(comm, from, &st) == strataSuccess, "%s", strataGetLastError(nullptr));
    RANK_EXPECT(st.lastSeq == 4 && st.lastColl == strataStatAllGather && st.thisRankSeq == 4,
                "predecessor %d: last %llu (kind %d), this rank %llu", from, (unsigned long long)st.lastSeq,
                int(st.lastColl), (unsigned long long)st.thisRankSeq);
    for (int peer : {(rank + 1) % n, (rank + 2) % n})
      RANK_EXPECT(strataCommGetPeerState(comm, peer, &st) == strataSuccess && st.lastSeq == 0,
                  "rank %d, which sends this rank nothing in a ring: last %llu", peer, (unsigned long long)st.lastSeq);
    RANK_EXPECT(strataCommGetPeerState(comm, n, &st) == strataInvalidArgument &&
                    std::strstr(strataGetLastError(nullptr), "peer 4 is not a rank"),
                "peer n: %s", strataGetLastError(nullptr));
    RANK_EXPECT(strataCommGetPeerState(comm, -1, &st) == strataInvalidArgument, "peer -1 accepted");
    RANK_EXPECT(strataCommGetPeerState(comm, 0, nullptr) == strataInvalidArgument, "NULL state accepted");
    RANK_EXPECT(strataCommGetPeerState(nullptr, 0, &st) == strataInvalidArgument, "NULL comm accepted");
    return problems;
  });
  EXPECT_TRUE(test::allSucceeded(outcomes)) << test::describe(outcomes);
}

TEST(Stats, SummaryPrintedAtDestroy) {
  std::string dir = tempDir();
  test::RankSpec spec;
  spec.nranks = 2;
  spec.env = {{"STRATA_STATS", "1"}};
  auto outcomes = test::runRanks(spec, [&](int rank, int, strataComm_t comm, const strataUniqueId&) {
    int problems = 0;
    std::vector<double> buf(1000, 1.0);
    for (int i = 0; i < 3; ++i)
      strataAllReduce(buf.data(), buf.data(), buf.size(), strataFloat64, strataSum, comm, nullptr);
    std::string path = dir + "/stats-" + std::to_string(rank) + ".txt";
    std::fflush(stderr);
    int saved = dup(2);
    FILE* f = std::freopen(path.c_str(), "w", stderr);
    RANK_EXPECT(f != nullptr, "cannot redirect stderr");
    strataCommDestroy(comm);
    std::fflush(stderr);
    dup2(saved, 2);
    std::string text = readFile(path);
    RANK_EXPECT(text.find("strata stats: rank") != std::string::npos &&
                    text.find("all_reduce") != std::string::npos && text.find("shm") != std::string::npos,
                "summary: %s", text.c_str());
    return problems;
  });
  EXPECT_TRUE(test::allSucceeded(outcomes)) << test::describe(outcomes);
}

// Rank 2 of 4 never arrives at a collective: every other rank's error and
// flight recorder dump name it, and where it was last seen.
void hungCollective(size_t count, const char* transport = nullptr) {
  std::string dir = tempDir();
  test::RankSpec spec;
  spec.nranks = 4;
  spec.env = {{"STRATA_TIMEOUT_MS", "1500"}, {"STRATA_FLIGHT_RECORDER_FILE", dir + "/fr-%r.txt"}};
  if (transport) spec.env["STRATA_TRANSPORT"] = transport;
  auto outcomes = test::runRanks(spec, [&](int rank, int, strataComm_t comm, const strataUniqueId&) {
    int problems = 0;
    std::vector<float> buf(count, 1.0f);
    for (int i = 0; i < 3; ++i)
      RANK_EXPECT(strataAllReduce(buf.data(), buf.data(), count, strataFloat32, strataSum, comm, nullptr) ==
                      strataSuccess, "warm-up: %s", strataGetLastError(comm));
    if (rank == 2) {
      std::this_thread::sleep_for(std::chrono::seconds(3));
      return problems;  // leaves without calling the fourth
    }
    strataResult_t r = strataAllReduce(buf.data(), buf.data(), count, strataFloat32, strataSum, comm, nullptr);
    const char* err = strataGetLastError(comm);
    RANK_EXPECT(r == strataTimeout || r == strataRemoteError, "got %s", strataGetErrorString(r));
    RANK_EXPECT(std::strstr(err, "rank 2 never arrived"), "the error does not name rank 2: %s", err);
    if (rank == 3)  // receives from rank 2 first in every algorithm here
      RANK_EXPECT(std::strstr(err, "AllReduce(count=") && std::strstr(err, "#3"),
                  "the error does not say where rank 2 was last seen: %s", err);
    std::string dump = readFile(dir + "/fr-" + std::to_string(rank) + ".txt");
    RANK_EXPECT(dump.find("strata flight recorder: rank " + std::to_string(rank)) != std::string::npos &&
                    dump.find("rank 2 never arrived") != std::string::npos &&
                    dump.find("AllReduce #4") != std::string::npos && dump.find("failed") != std::string::npos,
                "dump: %s", dump.c_str());
    strataCommAbort(comm);
    return problems;
  });
  EXPECT_TRUE(test::allSucceeded(outcomes)) << test::describe(outcomes);
}

TEST(FlightRecorder, TimeoutNamesTheRankThatNeverArrivedSmall) { hungCollective(1); }
TEST(FlightRecorder, TimeoutNamesTheRankThatNeverArrivedLarge) { hungCollective(1 << 20); }
TEST(FlightRecorder, TimeoutNamesTheRankThatNeverArrivedTcp) { hungCollective(1 << 18, "tcp"); }

// SIGUSR1 while a collective hangs: the dumps show it running, and what the
// ranks wait for names the rank that never arrived (and no other). Also in
// ranks forked from a process that had used strata before (a launcher that
// made a communicator, then forked its workers): they inherit the signal's
// handler but not the thread that dumps, and must get their own.
class SigusrDump : public ::testing::TestWithParam<bool> {};

TEST_P(SigusrDump, DumpsAHungCollective) {
  if (GetParam()) {
    strataUniqueId id;
    strataComm_t one = nullptr;
    ASSERT_EQ(strataGetUniqueId(&id), strataSuccess);
    ASSERT_EQ(strataCommInitRank(&one, 1, id, 0), strataSuccess) << strataGetLastError(nullptr);
    ASSERT_EQ(strataCommDestroy(one), strataSuccess);
  }
  std::string dir = tempDir();
  test::RankSpec spec;
  spec.nranks = 3;
  spec.env = {{"STRATA_TIMEOUT_MS", "20000"}, {"STRATA_FLIGHT_RECORDER_FILE", dir + "/fr-%r.txt"}};
  auto outcomes = test::runRanks(spec, [&](int rank, int, strataComm_t comm, const strataUniqueId&) {
    int problems = 0;
    std::vector<float> buf(64, 1.0f);
    strataAllReduce(buf.data(), buf.data(), 64, strataFloat32, strataSum, comm, nullptr);
    std::thread poke;
    if (rank == 2) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    } else {
      poke = std::thread([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(1800));
        raise(SIGUSR1);
      });
    }
    RANK_EXPECT(strataAllReduce(buf.data(), buf.data(), 64, strataFloat32, strataSum, comm, nullptr) ==
                    strataSuccess, "late all-reduce: %s", strataGetLastError(comm));
    if (poke.joinable()) poke.join();
    return problems;
  });
  ASSERT_TRUE(test::allSucceeded(outcomes)) << test::describe(outcomes);
  std::string both;
  for (int r : {0, 1}) {
    std::string dump = readFile(dir + "/fr-" + std::to_string(r) + ".txt");
    EXPECT_NE(dump.find("dumped on SIGUSR1"), std::string::npos) << dump;
    EXPECT_NE(dump.find("AllReduce #2"), std::string::npos) << dump;
    EXPECT_NE(dump.find("running"), std::string::npos) << dump;
    both += dump;
  }
  EXPECT_NE(both.find("rank 2 never arrived"), std::string::npos) << both;
  EXPECT_EQ(both.find("rank 0 never arrived"), std::string::npos) << both;
  EXPECT_EQ(both.find("rank 1 never arrived"), std::string::npos) << both;
}

INSTANTIATE_TEST_SUITE_P(Parent, SigusrDump, ::testing::Bool(), [](const auto& info) {
  return std::string(info.param ? "UsedStrataBeforeForking" : "Fresh");
});

// Four ranks on two pretend nodes (a topology file), rank 2 late by 30 ms for
// every collective: the trace has intra- and inter-node phases, kernel and
// wait spans, and the merged trace's straggler report (tools/strata-trace)
// names rank 2.
TEST(Trace, StragglerReportNamesTheDelayedRank) {
  std::string dir = tempDir();
  {
    std::ofstream topo(dir + "/topo.json");
    topo << R"({"ranks": [{"node": 0}, {"node": 0}, {"node": 1}, {"node": 1}]})";
  }
  test::RankSpec spec;
  spec.nranks = 4;
  spec.env = {{"STRATA_TRACE_FILE", dir + "/trace-%r.json"}, {"STRATA_TOPO_FILE", dir + "/topo.json"},
              {"STRATA_ALGO", "hier_ring"}};
  auto outcomes = test::runRanks(spec, [&](int rank, int, strataComm_t comm, const strataUniqueId&) {
    int problems = 0;
    std::vector<float> buf(65536, 1.0f);
    for (int i = 0; i < 12; ++i) {
      if (rank == 2) std::this_thread::sleep_for(std::chrono::milliseconds(30));
      RANK_EXPECT(strataAllReduce(buf.data(), buf.data(), buf.size(), strataFloat32, strataSum, comm, nullptr) ==
                      strataSuccess, "%s", strataGetLastError(comm));
    }
    strataCommDestroy(comm);
    return problems;
  });
  ASSERT_TRUE(test::allSucceeded(outcomes)) << test::describe(outcomes);
  std::string trace0 = readFile(dir + "/trace-0.json");
  EXPECT_NE(trace0.find("\"cat\":\"collective\""), std::string::npos) << trace0.substr(0, 2000);
  EXPECT_NE(trace0.find("\"name\":\"intra-node\""), std::string::npos);
  EXPECT_NE(trace0.find("\"name\":\"inter-node\""), std::string::npos);
  EXPECT_NE(trace0.find("\"algorithm\":\"hier_ring\""), std::string::npos);
  EXPECT_NE(trace0.find("\"name\":\"waiting for peers\""), std::string::npos);
  EXPECT_NE(trace0.find("\"name\":\"kernel/copy\""), std::string::npos);
  std::string cmd = std::string("python3 ") + STRATA_SOURCE_DIR + "/tools/strata-trace " + dir +
                    "/trace-*.json -o " + dir + "/merged.json > " + dir + "/report.txt 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << readFile(dir + "/report.txt");
  std::string report = readFile(dir + "/report.txt");
  EXPECT_NE(report.find("straggler: rank 2 (arrived last in 12 of 12"), std::string::npos) << report;
  EXPECT_NE(readFile(dir + "/merged.json").find("traceEvents"), std::string::npos);
}

// Recovery: rank 1 of 4 dies mid-training; the survivors see the error,
// shrink to a 3-rank communicator and carry on with verified results.
void killAndShrink(const char* transport) {
  test::RankSpec spec;
  spec.nranks = 4;
  spec.env = {{"STRATA_TIMEOUT_MS", "10000"}};
  if (transport) spec.env["STRATA_TRANSPORT"] = transport;
  auto outcomes = test::runRanks(spec, [&](int rank, int n, strataComm_t comm, const strataUniqueId&) {
    int problems = 0;
    const size_t count = 10007;
    std::vector<float> in(count), out(count);
    std::vector<int> everyone = {0, 1, 2, 3}, survivors = {0, 2, 3};
    int step = 0;
    for (; step < 20; ++step) {
      if (rank == 1 && step == 6) kill(getpid(), SIGKILL);
      for (size_t i = 0; i < count; ++i) in[i] = valueOf(rank, step, i);
      if (strataAllReduce(in.data(), out.data(), count, strataFloat32, strataSum, comm, nullptr) != strataSuccess)
        break;
      problems += checkSum(rank, everyone, step, out, "before the failure");
    }
    RANK_EXPECT(step == 6, "the failure surfaced at step %d, not 6", step);
    int dead = 1;
    strataComm_t smaller = nullptr;
    RANK_EXPECT(strataCommShrink(comm, &dead, 1, &smaller) == strataSuccess, "shrink: %s",
                strataGetLastError(nullptr));
    strataCommAbort(comm);
    if (!smaller) return problems + 1;
    int newRank = -1, newSize = -1;
    strataCommUserRank(smaller, &newRank);
    strataCommCount(smaller, &newSize);
    RANK_EXPECT(newSize == 3 && newRank == (rank == 0 ? 0 : rank - 1), "new rank %d of %d", newRank, newSize);
    for (; step < 16; ++step) {
      for (size_t i = 0; i < count; ++i) in[i] = valueOf(rank, step, i);
      RANK_EXPECT(strataAllReduce(in.data(), out.data(), count, strataFloat32, strataSum, smaller, nullptr) ==
                      strataSuccess, "after shrink: %s", strataGetLastError(smaller));
      problems += checkSum(rank, survivors, step, out, "after the shrink");
    }
    // A second shrink of the same communicator, and bad lists, are refused.
    strataComm_t again = nullptr;
    int self = newRank;
    RANK_EXPECT(strataCommShrink(smaller, &self, 1, &again) == strataInvalidArgument, "self-exclusion accepted");
    int outOfRange = 7;
    RANK_EXPECT(strataCommShrink(smaller, &outOfRange, 1, &again) == strataInvalidArgument, "rank 7 accepted");
    RANK_EXPECT(strataCommDestroy(smaller) == strataSuccess, "%s", strataGetLastError(nullptr));
    (void)n;
    return problems;
  });
  for (int r : {0, 2, 3}) EXPECT_EQ(outcomes[size_t(r)].exitCode, 0) << test::describe(outcomes);
  EXPECT_EQ(outcomes[1].exitCode, 128 + SIGKILL) << test::describe(outcomes);
}

TEST(Recovery, SurvivorsShrinkAndCarryOnShm) { killAndShrink(nullptr); }
TEST(Recovery, SurvivorsShrinkAndCarryOnTcp) { killAndShrink("tcp"); }

}  // namespace
}  // namespace strata
