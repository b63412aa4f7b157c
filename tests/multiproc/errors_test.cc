// Failure behaviour through the public C API: bad input gets the right code
// and a sentence; a killed rank, a silent rank and mismatched calls become
// errors on every other rank within a bound; strangers on the bootstrap port
// do not stop a communicator from forming.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/socket.h"
#include "bootstrap/wire.h"
#include "support/ranks.h"

namespace strata {
namespace {

using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

bool contains(const char* text, const char* word) { return std::strstr(text, word) != nullptr; }

TEST(BadInput, EveryBadArgumentGetsACodeAndASentence) {
  test::RankSpec spec;
  spec.nranks = 2;
  auto outcomes = test::runRanks(spec, [](int rank, int n, strataComm_t comm, const strataUniqueId&) {
    int problems = 0;
    std::vector<float> buf(64, 1.0f), out(128);
    auto expectCode = [&](strataResult_t got, strataResult_t want, const char* word, const char* what) {
      RANK_EXPECT(got == want, "%s: got %s, want %s", what, strataGetErrorString(got), strataGetErrorString(want));
      const char* last = strataGetLastError(nullptr);
      RANK_EXPECT(contains(last, word), "%s: last error '%s' lacks '%s'", what, last, word);
    };
    expectCode(strataAllReduce(nullptr, out.data(), 8, strataFloat32, strataSum, comm, nullptr),
               strataInvalidArgument, "sendbuff", "null sendbuff");
    expectCode(strataAllReduce(buf.data(), nullptr, 8, strataFloat32, strataSum, comm, nullptr),
               strataInvalidArgument, "recvbuff", "null recvbuff");
    expectCode(strataAllReduce(buf.data(), out.data(), SIZE_MAX / 2, strataFloat32, strataSum, comm, nullptr),
               strataInvalidArgument, "overflow", "count overflow");
    expectCode(strataAllGather(buf.data(), out.data(), SIZE_MAX / 5, strataFloat64, comm, nullptr),
               strataInvalidArgument, "overflow", "all-gather count overflow");
    // 2^48 bytes: more than any address space, and more than a descriptor's 48-bit count.
    expectCode(strataAllReduce(buf.data(), out.data(), size_t(1) << 46, strataFloat32, strataSum, comm, nullptr),
               strataInvalidArgument, "256 TiB", "count of 2^48 bytes");
    expectCode(strataAllReduce(buf.data(), out.data(), 8, strataDataType_t(99), strataSum, comm, nullptr),
               strataInvalidArgument, "datatype", "bad dtype");
    expectCode(strataAllReduce(buf.data(), out.data(), 8, strataFloat32, strataRedOp_t(42), comm, nullptr),
               strataInvalidArgument, "operator", "bad op");
    // Repeating a valid call with only the high bits of its dtype or operator
    // changed is still refused (the repeated-call memo compares whole arguments).
    RANK_EXPECT(strataAllReduce(buf.data(), out.data(), 8, strataFloat32, strataSum, comm, nullptr) == strataSuccess,
                "valid all-reduce: %s", strataGetLastError(comm));
    expectCode(strataAllReduce(buf.data(), out.data(), 8, strataDataType_t(strataFloat32 + 256), strataSum, comm,
                               nullptr),
               strataInvalidArgument, "datatype", "bad dtype repeating a valid call");
    expectCode(strataAllReduce(buf.data(), out.data(), 8, strataFloat32, strataRedOp_t(strataSum + 256), comm, nullptr),
               strataInvalidArgument, "operator", "bad op repeating a valid call");
    expectCode(strataBroadcast(buf.data(), out.data(), 8, strataFloat32, n, comm, nullptr),
               strataInvalidArgument, "root", "root == nranks");
    expectCode(strataReduce(buf.data(), out.data(), 8, strataFloat32, strataSum, -1, comm, nullptr),
               strataInvalidArgument, "root", "negative root");
    expectCode(strataSend(buf.data(), 8, strataFloat32, 7, comm, nullptr), strataInvalidArgument, "peer",
               "peer out of range");
    expectCode(strataRecv(out.data(), 8, strataFloat32, -2, comm, nullptr), strataInvalidArgument, "peer",
               "negative peer");
    expectCode(strataAllReduce(buf.data(), buf.data() + 1, 8, strataFloat32, strataSum, comm, nullptr),
               strataInvalidArgument, "overlap", "overlapping buffers");
    expectCode(strataAllReduce(buf.data(), out.data(), 8, strataFloat32, strataSum, nullptr, nullptr),
               strataInvalidArgument, "NULL", "null communicator");
    expectCode(strataGroupEnd(), strataInvalidUsage, "GroupStart", "unbalanced GroupEnd");
    int count = 0;
    expectCode(strataCommCount(comm, nullptr), strataInvalidArgument, "NULL", "null count pointer");
    RANK_EXPECT(strataCommCount(comm, &count) == strataSuccess && count == n, "count %d", count);
    // The communicator still works after argument errors.
    RANK_EXPECT(strataAllReduce(buf.data(), out.data(), 64, strataFloat32, strataSum, comm, nullptr) ==
                    strataSuccess && out[63] == float(n),
                "allreduce after bad calls: %s", strataGetLastError(comm));
    // Count 0 is legal and does nothing.
    RANK_EXPECT(strataAllReduce(nullptr, nullptr, 0, strataFloat32, strataSum, comm, nullptr) == strataSuccess,
                "count 0: %s", strataGetLastError(comm));
    return problems;
  });
  EXPECT_TRUE(test::allSucceeded(outcomes)) << test::describe(outcomes);
}

TEST(BadInput, InitRejectsBadArgumentsAndCallsOnDeadHandlesAreRefused) {
  strataComm_t comm = nullptr;
  strataUniqueId garbage;
  std::memset(&garbage, 0x5a, sizeof(garbage));
  EXPECT_EQ(strataCommInitRank(&comm, 2, garbage, 0), strataInvalidArgument);
  EXPECT_TRUE(contains(strataGetLastError(nullptr), "unique id")) << strataGetLastError(nullptr);
  strataUniqueId id;
  ASSERT_EQ(strataGetUniqueId(&id), strataSuccess);
  EXPECT_EQ(strataCommInitRank(&comm, 0, id, 0), strataInvalidArgument);
  EXPECT_EQ(strataCommInitRank(&comm, 2, id, 2), strataInvalidArgument);
  EXPECT_TRUE(contains(strataGetLastError(nullptr), "out of range")) << strataGetLastError(nullptr);
  EXPECT_EQ(strataCommInitRank(nullptr, 1, id, 0), strataInvalidArgument);
  strataConfig_t cfg = STRATA_CONFIG_INITIALIZER;
  cfg.magic = 0;
  EXPECT_EQ(strataCommInitRankConfig(&comm, 1, id, 0, &cfg), strataInvalidArgument);
  cfg = STRATA_CONFIG_INITIALIZER;
  cfg.timeoutMs = -5;
  EXPECT_EQ(strataCommInitRankConfig(&comm, 1, id, 0, &cfg), strataInvalidArgument);
  EXPECT_TRUE(contains(strataGetLastError(nullptr), "timeoutMs")) << strataGetLastError(nullptr);

  // A one-rank communicator made for real, then destroyed / aborted.
  cfg = STRATA_CONFIG_INITIALIZER;
  ASSERT_EQ(strataCommInitRankConfig(&comm, 1, id, 0, &cfg), strataSuccess) << strataGetLastError(nullptr);
  float x = 2, y = 0;
  ASSERT_EQ(strataAllReduce(&x, &y, 1, strataFloat32, strataAvg, comm, nullptr), strataSuccess);
  EXPECT_EQ(y, 2.0f);
  ASSERT_EQ(strataCommDestroy(comm), strataSuccess);
  EXPECT_EQ(strataAllReduce(&x, &y, 1, strataFloat32, strataSum, comm, nullptr), strataInvalidArgument);
  EXPECT_TRUE(contains(strataGetLastError(nullptr), "not a live communicator")) << strataGetLastError(nullptr);
  EXPECT_EQ(strataCommDestroy(comm), strataInvalidArgument);

  ASSERT_EQ(strataGetUniqueId(&id), strataSuccess);
  ASSERT_EQ(strataCommInitRank(&comm, 1, id, 0), strataSuccess);
  EXPECT_EQ(strataCommAbort(comm), strataSuccess);
  EXPECT_EQ(strataBarrier(comm, nullptr), strataInvalidArgument);
  int version = 0;
  EXPECT_EQ(strataGetVersion(&version), strataSuccess);
  EXPECT_EQ(version, STRATA_VERSION_CODE);
  EXPECT_STRNE(strataGetErrorString(strataMismatch), strataGetErrorString(strataTimeout));
}

struct KillCase {
  int nranks;
  const char* transport;
  const char* variable = nullptr;  // a setting for the library underneath
  const char* value = nullptr;
};

class KilledRank : public ::testing::TestWithParam<KillCase> {};

TEST_P(KilledRank, EverySurvivorReturnsAnErrorPromptly) {
  const KillCase kc = GetParam();
  test::RankSpec spec;
  spec.nranks = kc.nranks;
  spec.env = {{"STRATA_TRANSPORT", kc.transport}, {"STRATA_TIMEOUT_MS", "60000"}};
  if (kc.variable) spec.env[kc.variable] = kc.value;
  spec.deadlineSec = 90;
  const int victim = kc.nranks - 1;
  auto outcomes = test::runRanks(spec, [victim](int rank, int, strataComm_t comm, const strataUniqueId&) {
    int problems = 0;
    std::vector<float> in(1 << 20, 1.0f), out(1 << 20);
    if (rank == victim) {  // dies from another thread while inside a collective
      std::thread([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        raise(SIGKILL);
      }).detach();
    }
    for (int it = 0; it < 100000; ++it) {
      auto start = Clock::now();
      strataResult_t rc = strataAllReduce(in.data(), out.data(), in.size(), strataFloat32, strataSum, comm, nullptr);
      if (rc == strataSuccess) continue;
      double took = secondsSince(start);
      RANK_EXPECT(rc == strataRemoteError, "got %s: %s", strataGetErrorString(rc), strataGetLastError(comm));
      RANK_EXPECT(took < 10.0, "the error took %.1f s (timeout is 60 s)", took);
      const std::string error = strataGetLastError(comm);
      RANK_EXPECT(contains(error.c_str(), ("rank " + std::to_string(victim)).c_str()),
                  "the error does not name rank %d: '%s'", victim, error.c_str());
      // Survivors were all inside the collective: within the time a peer
      // takes to announce itself, none may be said to have never arrived.
      for (int peer = 0; took < 1.0 && peer < victim; ++peer)
        RANK_EXPECT(!contains(error.c_str(), ("rank " + std::to_string(peer) + " never arrived").c_str()),
                    "a survivor is said to have never arrived after %.2f s: '%s'", took, error.c_str());
      // Further calls fail fast; abort cleans up.
      RANK_EXPECT(strataBarrier(comm, nullptr) != strataSuccess, "barrier on a failed communicator succeeded");
      RANK_EXPECT(strataCommAbort(comm) == strataSuccess, "abort: %s", strataGetLastError(nullptr));
      std::fflush(stderr);
      _exit(problems);
    }
    RANK_EXPECT(false, "the victim never died");
    return problems;
  });
  for (int r = 0; r < kc.nranks; ++r) {
    if (r == victim) {
      EXPECT_EQ(outcomes[size_t(r)].exitCode, 128 + SIGKILL) << test::describe(outcomes);
    } else {
      EXPECT_EQ(outcomes[size_t(r)].exitCode, 0) << test::describe(outcomes);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, KilledRank,
                         ::testing::Values(KillCase{3, "shm"}, KillCase{4, "tcp"}, KillCase{5, "shm"},
                                           KillCase{3, "ofi", "FI_PROVIDER", "tcp"},
                                           KillCase{3, "ofi", "FI_PROVIDER", "shm"},
                                           KillCase{3, "ucx", "UCX_TLS", "tcp"},
                                           KillCase{3, "ucx", "UCX_TLS", "posix,self"}),
                         [](const auto& info) {
                           std::string name = std::string(info.param.transport) + "_" + std::to_string(info.param.nranks);
                           if (info.param.value) name += std::string("_") + info.param.value;
                           for (char& c : name)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

TEST(SilentRank, OthersTimeOutAfterTheConfiguredTimeout) {
  test::RankSpec spec;
  spec.nranks = 3;
  spec.env = {{"STRATA_TIMEOUT_MS", "1500"}};
  auto outcomes = test::runRanks(spec, [](int rank, int, strataComm_t comm, const strataUniqueId&) {
    int problems = 0;
    float x = 1, y = 0;
    RANK_EXPECT(strataAllReduce(&x, &y, 1, strataFloat32, strataSum, comm, nullptr) == strataSuccess, "first call");
    if (rank == 2) {  // alive but never calls again
      std::this_thread::sleep_for(std::chrono::seconds(4));
      _exit(0);
    }
    auto start = Clock::now();
    strataResult_t rc = strataAllReduce(&x, &y, 1, strataFloat32, strataSum, comm, nullptr);
    double took = secondsSince(start);
    RANK_EXPECT(rc == strataTimeout || rc == strataRemoteError, "got %s", strataGetErrorString(rc));
    RANK_EXPECT(took >= 1.4 && took < 6.0, "took %.2f s for a 1.5 s timeout", took);
    // A rank waiting directly on the silent one names it; a rank waiting on a
    // waiting rank names that one. Exit 50 reports "fine, but did not name rank 2".
    bool named = contains(strataGetLastError(comm), "from rank 2") ||
                 contains(strataGetLastError(comm), "rank 2 to take");
    strataCommAbort(comm);
    std::fflush(stderr);
    _exit(problems ? problems : (named ? 0 : 50));
    return problems;
  });
  EXPECT_EQ(outcomes[2].exitCode, 0) << test::describe(outcomes);
  for (int r = 0; r < 2; ++r)
    EXPECT_TRUE(outcomes[size_t(r)].exitCode == 0 || outcomes[size_t(r)].exitCode == 50) << test::describe(outcomes);
  EXPECT_TRUE(outcomes[0].exitCode == 0 || outcomes[1].exitCode == 0)
      << "no survivor named the silent rank 2: " << test::describe(outcomes);
}

struct MismatchCase {
  const char* name;
  size_t count0, count1;
  strataDataType_t dtype0, dtype1;
  bool singleCopy = false;  // shm lends every packet: readers read the lender's memory
};

class Mismatch : public ::testing::TestWithParam<MismatchCase> {};

TEST_P(Mismatch, EveryRankGetsStrataMismatchNamingBothSides) {
  const MismatchCase mc = GetParam();
  test::RankSpec spec;
  spec.nranks = 3;
  spec.env = {{"STRATA_TIMEOUT_MS", "20000"}};
  if (mc.singleCopy) spec.env["STRATA_SHM_SINGLE_COPY_BYTES"] = "1";
  auto outcomes = test::runRanks(spec, [mc](int rank, int, strataComm_t comm, const strataUniqueId&) {
    int problems = 0;
    std::vector<double> in(mc.count0 + mc.count1 + 8, 1.0), out(in.size());
    bool odd = rank == 1;
    auto start = Clock::now();
    strataResult_t rc = strataAllReduce(in.data(), out.data(), odd ? mc.count1 : mc.count0,
                                        odd ? mc.dtype1 : mc.dtype0, strataSum, comm, nullptr);
    RANK_EXPECT(rc == strataMismatch, "got %s: %s", strataGetErrorString(rc), strataGetLastError(comm));
    RANK_EXPECT(secondsSince(start) < 10, "took %.1f s", secondsSince(start));
    const char* last = strataGetLastError(comm);
    RANK_EXPECT(contains(last, "mismatch") && contains(last, "count=") && contains(last, "AllReduce"), "last error '%s'", last);
    strataCommAbort(comm);
    std::fflush(stderr);
    _exit(problems);
    return problems;
  });
  EXPECT_TRUE(test::allSucceeded(outcomes)) << test::describe(outcomes);
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, Mismatch,
    ::testing::Values(MismatchCase{"small_count", 1000, 1001, strataFloat32, strataFloat32},
                      MismatchCase{"large_count", 1000000, 1000003, strataFloat32, strataFloat32},
                      MismatchCase{"large_count_single_copy", 1000000, 1000003, strataFloat32, strataFloat32, true},
                      MismatchCase{"dtype", 4096, 4096, strataFloat32, strataInt32}),
    [](const auto& info) { return std::string(info.param.name); });

// Connects to addr and writes `bytes`; keeps the socket open until the fd closes.
Fd stranger(SockAddr addr, const std::string& bytes) {
  Fd fd = connectTo(addr, nowMs() + 5000);
  if (!bytes.empty()) sendAll(fd.get(), bytes.data(), bytes.size(), nowMs() + 5000, "stranger write");
  return fd;
}

TEST(Strangers, BootstrapPortGarbageAndWrongSecretsAreDroppedAndTheCommunicatorForms) {
  test::RankSpec spec;
  spec.nranks = 3;
  spec.initComm = false;
  auto outcomes = test::runRanks(spec, [](int rank, int n, strataComm_t, const strataUniqueId& id) {
    int problems = 0;
    std::vector<Fd> strangers;
    if (rank == 0) {
      UniqueIdData d;
      std::string why;
      decodeUniqueId(id, &d, &why);
      strangers.push_back(stranger(d.root, std::string(300, 'G')));        // garbage
      strangers.push_back(stranger(d.root, ""));                          // silent
      Hello h;
      h.kind = HelloKind::kBootstrap;
      h.secret = randomSecret();  // wrong secret
      h.nranks = n;
      h.fromRank = 1;
      std::string msg(kHelloBytes + kRankInfoBytes, '\0');
      encodeHello(h, reinterpret_cast<uint8_t*>(msg.data()));
      strangers.push_back(stranger(d.root, msg));
    }
    strataComm_t comm = nullptr;
    strataResult_t rc = strataCommInitRank(&comm, n, id, rank);
    RANK_EXPECT(rc == strataSuccess, "init: %s", strataGetLastError(nullptr));
    if (rc != strataSuccess) return problems;
    std::vector<int32_t> in(1000, rank + 1), out(1000);
    rc = strataAllReduce(in.data(), out.data(), in.size(), strataInt32, strataSum, comm, nullptr);
    RANK_EXPECT(rc == strataSuccess && out[999] == n * (n + 1) / 2, "allreduce: %s", strataGetLastError(comm));
    strataCommDestroy(comm);
    return problems;
  });
  EXPECT_TRUE(test::allSucceeded(outcomes)) << test::describe(outcomes);
}

}  // namespace
}  // namespace strata
