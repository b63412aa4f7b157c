// The tiny path (src/exec/tiny_run.h): a plan whose flows are one packet each
// over shm runs compiled from its second call on. Through the public C API in
// real processes: every small collective x dtype x op x placement, repeated so
// that the later calls take the compiled form, against the float64
// reference on 1, 2, 3 and 5 ranks; ranks that take different paths for the
// same calls; a mismatch and a dead peer met on the tiny path; and what
// statistics and the flight recorder say of tiny calls, only some of which
// are timed.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/collective_cases.h"
#include "support/ranks.h"
#include "support/reference.h"

namespace strata {
namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Every case of at most 1023 elements, each run three times (the first call
// builds the plan and runs it as any other; the next two run the compiled
// form where the plan is tiny), each call checked against the reference.
int runSmallCasesRepeated(int rank, int n, strataComm_t comm) {
  int problems = 0;
  std::vector<test::Case> cases = test::allCases();
  for (size_t i = 0; i < cases.size(); ++i) {
    const test::Case& c = cases[i];
    if (c.count > 1023) continue;
    for (int call = 0; call < 3; ++call) {
      std::string err = test::runCase(c, i, rank, n, comm);
      if (err.empty()) continue;
      std::fprintf(stderr, "rank %d case %zu call %d %s: %s\n", rank, i, call, test::describeCase(c).c_str(),
                   err.c_str());
      if (++problems > 5 || err.find("returned") == 0) return problems;
    }
  }
  return problems;
}

class TinyPath : public ::testing::TestWithParam<int> {};

TEST_P(TinyPath, RepeatedSmallCallsMatchTheReference) {
  test::RankSpec spec;
  spec.nranks = GetParam();
  spec.env = {{"STRATA_TRANSPORT", "shm"}, {"STRATA_TIMEOUT_MS", "60000"}};
  spec.deadlineSec = 400;
  auto outcomes = test::runRanks(spec, [](int rank, int n, strataComm_t comm, const strataUniqueId&) {
    return runSmallCasesRepeated(rank, n, comm);
  });
  EXPECT_TRUE(test::allSucceeded(outcomes)) << test::describe(outcomes);
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, TinyPath, ::testing::Values(1, 2, 3, 5),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

// Ranks 0 and 2 run everything as any other plan (STRATA_TINY_PATH=0), ranks
// 1 and 3 take the tiny path: the two read each other's packets.
TEST(TinyPath, RanksOnDifferentPathsAgree) {
  test::RankSpec spec;
  spec.nranks = 4;
  spec.initComm = false;
  spec.env = {{"STRATA_TRANSPORT", "shm"}, {"STRATA_TIMEOUT_MS", "60000"}};
  spec.deadlineSec = 400;
  auto outcomes = test::runRanks(spec, [](int rank, int n, strataComm_t, const strataUniqueId& id) {
    int problems = 0;
    setenv("STRATA_TINY_PATH", rank % 2 ? "1" : "0", 1);
    strataComm_t comm = nullptr;
    RANK_EXPECT(strataCommInitRank(&comm, n, id, rank) == strataSuccess, "init: %s", strataGetLastError(nullptr));
    if (problems) return problems;
    problems += runSmallCasesRepeated(rank, n, comm);
    RANK_EXPECT(strataCommDestroy(comm) == strataSuccess, "destroy: %s", strataGetLastError(comm));
    return problems;
  });
  EXPECT_TRUE(test::allSucceeded(outcomes)) << test::describe(outcomes);
}

// Both ranks have run all-reduces of 1 and of 2 floats twice (both compiled);
// then rank 0 calls the one and rank 1 the other: the descriptor check of the
// tiny path fails on both, with strataMismatch naming both calls.
TEST(TinyPath, AMismatchIsCaughtOnTheTinyPath) {
  test::RankSpec spec;
  spec.nranks = 2;
  spec.env = {{"STRATA_TRANSPORT", "shm"}, {"STRATA_TIMEOUT_MS", "20000"}};
  auto outcomes = test::runRanks(spec, [](int rank, int, strataComm_t comm, const strataUniqueId&) {
    int problems = 0;
    float in[2] = {1.0f + rank, 2.0f}, out[2] = {0, 0};
    for (int rep = 0; rep < 2; ++rep)
      for (size_t count : {1, 2})
        RANK_EXPECT(strataAllReduce(in, out, count, strataFloat32, strataSum, comm, nullptr) == strataSuccess,
                    "warm-up: %s", strataGetLastError(comm));
    RANK_EXPECT(out[0] == 3.0f && out[1] == 4.0f, "warm-up sums %g %g", double(out[0]), double(out[1]));
    strataResult_t rc = strataAllReduce(in, out, rank == 0 ? 1 : 2, strataFloat32, strataSum, comm, nullptr);
    const std::string error = strataGetLastError(comm);
    RANK_EXPECT(rc == strataMismatch, "got %s: %s", strataGetErrorString(rc), error.c_str());
    RANK_EXPECT(contains(error, "count=1,") && contains(error, "count=2,"), "the error does not name both calls: '%s'",
                error.c_str());
    return problems;
  });
  EXPECT_TRUE(test::allSucceeded(outcomes)) << test::describe(outcomes);
}

// A rank killed while the others repeat a tiny all-reduce: every survivor
// gets strataRemoteError naming it, well within the timeout.
TEST(TinyPath, ADeadPeerIsAnErrorOnEverySurvivor) {
  test::RankSpec spec;
  spec.nranks = 3;
  spec.env = {{"STRATA_TRANSPORT", "shm"}, {"STRATA_TIMEOUT_MS", "60000"}};
  spec.deadlineSec = 90;
  auto outcomes = test::runRanks(spec, [](int rank, int, strataComm_t comm, const strataUniqueId&) {
    int problems = 0;
    float in[3] = {1, 2, 3}, out[3];
    if (rank == 2) {
      std::thread([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        raise(SIGKILL);
      }).detach();
    }
    for (long it = 0; it < 100000000; ++it) {
      strataResult_t rc = strataAllReduce(in, out, 3, strataFloat32, strataSum, comm, nullptr);
      if (rc == strataSuccess) continue;
      const auto start = std::chrono::steady_clock::now();
      const std::string error = strataGetLastError(comm);
      RANK_EXPECT(rc == strataRemoteError, "got %s: %s", strataGetErrorString(rc), error.c_str());
      RANK_EXPECT(contains(error, "rank 2"), "the error does not name rank 2: '%s'", error.c_str());
      RANK_EXPECT(it > 10, "failed after %ld calls only, before any ran on the tiny path", it);
      RANK_EXPECT(strataBarrier(comm, nullptr) != strataSuccess, "barrier on a failed communicator succeeded");
      RANK_EXPECT(std::chrono::steady_clock::now() - start < std::chrono::seconds(10), "slow to fail");
      std::fflush(stderr);
      _exit(problems);
    }
    RANK_EXPECT(false, "rank 2 never died");
    return problems;
  });
  EXPECT_EQ(outcomes[0].exitCode, 0) << test::describe(outcomes);
  EXPECT_EQ(outcomes[1].exitCode, 0) << test::describe(outcomes);
  EXPECT_EQ(outcomes[2].exitCode, 128 + SIGKILL) << test::describe(outcomes);
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// 1000 repeated tiny all-reduces: the statistics count every call and its
// bytes and a time near the caller's (one call in 16 is timed and stands for
// the others), the flight recorder lists the repeats as one record, and a
// tiny call that hangs is in a SIGUSR1 dump as a record of its own.
TEST(TinyPath, StatisticsAndFlightRecorderOfTinyCalls) {
  char tmpl[] = "/tmp/strata-tiny-XXXXXX";
  const std::string dir = mkdtemp(tmpl) ? tmpl : "/tmp";
  test::RankSpec spec;
  spec.nranks = 2;
  spec.env = {{"STRATA_TRANSPORT", "shm"}, {"STRATA_TIMEOUT_MS", "20000"},
              {"STRATA_FLIGHT_RECORDER_FILE", dir + "/fr-%r.txt"}};
  auto outcomes = test::runRanks(spec, [](int rank, int n, strataComm_t comm, const strataUniqueId&) {
    int problems = 0;
    const int calls = 1000;
    float in[4] = {1, 2, 3, 4}, out[4];
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i)
      RANK_EXPECT(strataAllReduce(in, out, 4, strataFloat32, strataSum, comm, nullptr) == strataSuccess,
                  "all-reduce %d: %s", i, strataGetLastError(comm));
    const double callerSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    RANK_EXPECT(out[3] == 4.0f * float(n), "sum %g", double(out[3]));
    strataStats_t st;
    RANK_EXPECT(strataCommGetStats(comm, &st) == strataSuccess, "%s", strataGetLastError(comm));
    const strataCollStats_t& ar = st.coll[strataStatAllReduce];
    RANK_EXPECT(ar.calls == uint64_t(calls) && ar.bytes == uint64_t(calls) * 16, "calls %llu bytes %llu",
                (unsigned long long)ar.calls, (unsigned long long)ar.bytes);
    RANK_EXPECT(ar.seconds > 0 && ar.seconds < callerSeconds * 2, "recorded %g s for calls the caller timed at %g s",
                ar.seconds, callerSeconds);
    RANK_EXPECT(st.transport[strataTransportShm].bytesSent > 0, "no shm traffic counted");
    // A tiny call that hangs: rank 1 comes 2.5 s late; rank 0 dumps at 1.8 s.
    std::thread poke;
    if (rank == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    } else {
      poke = std::thread([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(1800));
        raise(SIGUSR1);
      });
    }
    RANK_EXPECT(strataAllReduce(in, out, 4, strataFloat32, strataSum, comm, nullptr) == strataSuccess,
                "late all-reduce: %s", strataGetLastError(comm));
    if (poke.joinable()) poke.join();
    return problems;
  });
  ASSERT_TRUE(test::allSucceeded(outcomes)) << test::describe(outcomes);
  const std::string dump = readFile(dir + "/fr-0.txt");
  EXPECT_TRUE(contains(dump, "dumped on SIGUSR1")) << dump;
  EXPECT_TRUE(contains(dump, "AllReduce #1001")) << dump;  // the hung call, with its wait
  EXPECT_TRUE(contains(dump, "running")) << dump;
  EXPECT_TRUE(contains(dump, "rank 1")) << dump;
  // The first call ran the general executor; the 999 after it, repeats of
  // one compiled plan, are one record (a run of repeats).
  EXPECT_TRUE(contains(dump, "AllReduce #1 ")) << dump;
  EXPECT_TRUE(contains(dump, "AllReduce #2-#1000 (999 calls)")) << dump;
}

// The repeated-call fast path (runRepeatedCall): the same call again and
// again on 3 ranks, with new random values in the same buffers each time,
// in and out of place, each result checked against the float64 reference;
// the same call inside a group is queued, not run at once, and lands right
// at strataGroupEnd.
TEST(TinyPath, RepeatedCallsReadTheirBuffersAnewAndGroupsStillQueue) {
  test::RankSpec spec;
  spec.nranks = 3;
  spec.env = {{"STRATA_TRANSPORT", "shm"}};
  auto outcomes = test::runRanks(spec, [](int rank, int n, strataComm_t comm, const strataUniqueId&) {
    int problems = 0;
    const size_t count = 13;
    // Every rank's input of a call (random per call and rank: test::fillRandom), and
    // whether `got` is their float64 sum.
    std::vector<std::vector<float>> inputs(size_t(n), std::vector<float>(count, 0.0f));
    auto fillInputs = [&](int call) {
      for (int r = 0; r < n; ++r)
        test::fillRandom(strataFloat32, strataSum, inputs[size_t(r)].data(), count, uint64_t(call) * 64 + uint64_t(r));
    };
    auto mismatch = [&](const std::vector<float>& got) {
      std::vector<const void*> all;
      for (const auto& in : inputs) all.push_back(in.data());
      std::string first;
      return test::checkReduced(strataFloat32, strataSum, got.data(), all, 0, count, &first) ? first : std::string();
    };
    std::vector<float> in(count), out(count), inPlace(count);
    // 30 calls out of place, then 30 in place: each repeats the one before.
    for (int call = 0; call < 60 && !problems; ++call) {
      const bool inPlaceCall = call >= 30;
      fillInputs(call);
      in = inPlace = inputs[size_t(rank)];
      RANK_EXPECT(strataAllReduce(inPlaceCall ? inPlace.data() : in.data(), inPlaceCall ? inPlace.data() : out.data(),
                                  count, strataFloat32, strataSum, comm, nullptr) == strataSuccess,
                  "call %d: %s", call, strataGetLastError(comm));
      const std::string wrong = mismatch(inPlaceCall ? inPlace : out);
      RANK_EXPECT(wrong.empty(), "call %d: %s", call, wrong.c_str());
    }
    // The call repeated once more, now inside a group: nothing lands before strataGroupEnd.
    fillInputs(99);
    in = inputs[size_t(rank)];
    std::fill(out.begin(), out.end(), -1.0f);
    RANK_EXPECT(strataGroupStart() == strataSuccess, "group start");
    RANK_EXPECT(strataAllReduce(in.data(), out.data(), count, strataFloat32, strataSum, comm, nullptr) ==
                    strataSuccess, "grouped: %s", strataGetLastError(comm));
    RANK_EXPECT(out[0] == -1.0f, "a grouped call ran before strataGroupEnd");
    RANK_EXPECT(strataGroupEnd() == strataSuccess, "group end: %s", strataGetLastError(comm));
    const std::string wrong = mismatch(out);
    RANK_EXPECT(wrong.empty(), "grouped: %s", wrong.c_str());
    return problems;
  });
  EXPECT_TRUE(test::allSucceeded(outcomes)) << test::describe(outcomes);
}

// The counts a run of tiny calls leaves in the statistics, one line per
// collective and transport used: what the tiny path's record
// (Observer::beginRepeated / endRepeated) must count exactly as the general
// executor's does.
std::string countedCalls(const strataStats_t& st) {
  std::string s;
  for (int c = 0; c < strataNumStatColls; ++c)
    if (st.coll[c].calls || st.coll[c].failed)
      s += "coll " + std::to_string(c) + ": calls " + std::to_string(st.coll[c].calls) + " failed " +
           std::to_string(st.coll[c].failed) + " bytes " + std::to_string(st.coll[c].bytes) + "\n";
  for (int t = 0; t < strataNumTransports; ++t)
    if (st.transport[t].links)
      s += "transport " + std::to_string(t) + ": links " + std::to_string(st.transport[t].links) + " sent " +
           std::to_string(st.transport[t].bytesSent) + " received " + std::to_string(st.transport[t].bytesReceived) +
           "\n";
  return s;
}

// 3 ranks, repeated all-reduces, broadcasts from rank 1 and all-gathers of
// odd counts: the statistics of the tiny path (STRATA_TINY_PATH=1) are those
// of the general executor (=0), call for call and byte for byte.
TEST(TinyPath, StatisticsCountTinyCallsAsGeneralOnes) {
  char tmpl[] = "/tmp/strata-tiny-stats-XXXXXX";
  ASSERT_TRUE(mkdtemp(tmpl));
  const std::string dir = tmpl;
  for (const char* tiny : {"1", "0"}) {
    test::RankSpec spec;
    spec.nranks = 3;
    spec.env = {{"STRATA_TRANSPORT", "shm"}, {"STRATA_TINY_PATH", tiny}};
    auto outcomes = test::runRanks(spec, [&](int rank, int n, strataComm_t comm, const strataUniqueId&) {
      int problems = 0;
      std::vector<double> in(7 * size_t(n)), out(7 * size_t(n));
      for (size_t i = 0; i < in.size(); ++i) in[i] = 0.5 + double(rank) + double(i) / 8;
      for (int i = 0; i < 50 && !problems; ++i) {
        RANK_EXPECT(strataAllReduce(in.data(), out.data(), 3, strataFloat64, strataMax, comm, nullptr) ==
                        strataSuccess, "all-reduce: %s", strataGetLastError(comm));
        RANK_EXPECT(strataBroadcast(in.data(), out.data(), 5, strataFloat64, 1, comm, nullptr) == strataSuccess,
                    "broadcast: %s", strataGetLastError(comm));
        RANK_EXPECT(strataAllGather(in.data(), out.data(), 7, strataFloat64, comm, nullptr) == strataSuccess,
                    "all-gather: %s", strataGetLastError(comm));
      }
      for (int r = 0; r < n; ++r)
        for (int j = 0; j < 7; ++j)
          RANK_EXPECT(out[size_t(r) * 7 + size_t(j)] == 0.5 + double(r) + double(j) / 8, "all-gather of rank %d", r);
      strataStats_t st;
      RANK_EXPECT(strataCommGetStats(comm, &st) == strataSuccess, "%s", strataGetLastError(comm));
      std::ofstream(dir + "/" + tiny + "-" + std::to_string(rank) + ".txt") << countedCalls(st);
      return problems;
    });
    ASSERT_TRUE(test::allSucceeded(outcomes)) << "STRATA_TINY_PATH=" << tiny << ": " << test::describe(outcomes);
  }
  for (int rank = 0; rank < 3; ++rank) {
    const std::string tiny = readFile(dir + "/1-" + std::to_string(rank) + ".txt");
    const std::string general = readFile(dir + "/0-" + std::to_string(rank) + ".txt");
    EXPECT_TRUE(contains(tiny, "calls 50 failed 0")) << tiny;
    EXPECT_EQ(tiny, general) << "rank " << rank;
    std::remove((dir + "/1-" + std::to_string(rank) + ".txt").c_str());
    std::remove((dir + "/0-" + std::to_string(rank) + ".txt").c_str());
  }
  rmdir(dir.c_str());
}

}  // namespace
}  // namespace strata
