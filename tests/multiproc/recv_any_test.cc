// strataRecvAny (MPI_ANY_SOURCE): a receiver in the middle of the rank order
// takes every other rank's send in whatever order they arrive, with links
// to lower and higher ranks made on the fly; a rank that left is skipped;
// silence times out; a size mismatch and bad arguments are errors.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "support/ranks.h"
#include "support/reference.h"

namespace strata {
namespace {

constexpr int kReceiver = 1;

// Payload of rank `from` in the round of `count` elements.
std::vector<float> payloadOf(int from, size_t count) {
  std::vector<float> v(count);
  test::fillRandom(strataFloat32, strataSum, v.data(), count, size_t(from) * 131 + count);
  return v;
}

// The receiver's side of one round: n - 1 strataRecvAny, each sender once.
int receiveFromEveryone(int n, size_t count, strataComm_t comm) {
  const int rank = kReceiver;  // for RANK_EXPECT
  int problems = 0;
  std::vector<bool> seen(size_t(n), false);
  for (int k = 0; k < n - 1; ++k) {
    std::vector<float> got(count, -1.0f);
    int from = -2;
    strataResult_t rc = strataRecvAny(got.data(), count, strataFloat32, &from, comm, nullptr);
    RANK_EXPECT(rc == strataSuccess, "recv any: %s", strataGetLastError(comm));
    if (rc != strataSuccess) return problems;
    RANK_EXPECT(from >= 0 && from < n && from != kReceiver, "source %d", from);
    if (from < 0 || from >= n || from == kReceiver) return problems;
    RANK_EXPECT(!seen[size_t(from)], "rank %d matched twice (count %zu)", from, count);
    seen[size_t(from)] = true;
    std::vector<float> expect = payloadOf(from, count);
    RANK_EXPECT(std::memcmp(got.data(), expect.data(), count * 4) == 0,
                "payload attributed to rank %d is not its data (count %zu)", from, count);
  }
  return problems;
}

class RecvAny : public ::testing::TestWithParam<std::tuple<int, const char*>> {};

TEST_P(RecvAny, TakesEverySenderOnceWithItsData) {
  test::RankSpec spec;
  spec.nranks = std::get<0>(GetParam());
  spec.env = {{"STRATA_TRANSPORT", std::get<1>(GetParam())}, {"STRATA_TIMEOUT_MS", "30000"}};
  auto outcomes = test::runRanks(spec, [](int rank, int n, strataComm_t comm, const strataUniqueId&) {
    int problems = 0;
    // A prime count and one larger than a link buffers (senders then wait
    // for the receiver mid-message).
    for (size_t count : {size_t(1), size_t(1009), size_t(300007)}) {
      if (rank == kReceiver) {
        problems += receiveFromEveryone(n, count, comm);
      } else {
        usleep(useconds_t(((rank * 37) % 5) * 20000));  // arrive in a scrambled order
        std::vector<float> mine = payloadOf(rank, count);
        strataResult_t rc = strataSend(mine.data(), count, strataFloat32, kReceiver, comm, nullptr);
        RANK_EXPECT(rc == strataSuccess, "send: %s", strataGetLastError(comm));
      }
      // Rounds apart: a sender's next message would match as well.
      RANK_EXPECT(strataBarrier(comm, nullptr) == strataSuccess, "barrier: %s", strataGetLastError(comm));
    }
    return problems;
  });
  EXPECT_TRUE(test::allSucceeded(outcomes)) << test::describe(outcomes);
}

INSTANTIATE_TEST_SUITE_P(Transports, RecvAny,
                         ::testing::Values(std::make_tuple(3, "shm"), std::make_tuple(5, "shm"),
                                           std::make_tuple(3, "tcp"), std::make_tuple(5, "tcp")),
                         [](const auto& info) {
                           return std::string(std::get<1>(info.param)) + "_" + std::to_string(std::get<0>(info.param));
                         });

TEST(RecvAnyErrors, SkipsARankThatLeftAndTimesOutOnSilence) {
  test::RankSpec spec;
  spec.nranks = 4;
  spec.env = {{"STRATA_TIMEOUT_MS", "1500"}};
  auto outcomes = test::runRanks(spec, [](int rank, int, strataComm_t comm, const strataUniqueId&) {
    int problems = 0;
    std::vector<int32_t> buf(97);
    for (size_t i = 0; i < buf.size(); ++i) buf[i] = int32_t(i * 7) + rank;
    if (rank == 2 || rank == 3) return problems;  // leave at once (the harness destroys the comm)
    if (rank == 0) {
      usleep(300000);
      RANK_EXPECT(strataSend(buf.data(), buf.size(), strataInt32, kReceiver, comm, nullptr) == strataSuccess,
                  "send: %s", strataGetLastError(comm));
      usleep(3000000);  // stay, silent, past the receiver's timeout
      return problems;
    }
    std::vector<int32_t> got(97, -1);
    int from = -1;
    strataResult_t rc = strataRecvAny(got.data(), got.size(), strataInt32, &from, comm, nullptr);
    RANK_EXPECT(rc == strataSuccess && from == 0, "recv any: rc %d from %d: %s", int(rc), from,
                strataGetLastError(comm));
    RANK_EXPECT(got[96] == 96 * 7, "got %d", got[96]);
    auto t0 = std::chrono::steady_clock::now();
    rc = strataRecvAny(got.data(), got.size(), strataInt32, &from, comm, nullptr);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    RANK_EXPECT(rc == strataTimeout, "silence gave %s: %s", strataGetErrorString(rc), strataGetLastError(comm));
    RANK_EXPECT(s < 5.0, "timed out after %.1f s (timeout 1.5 s)", s);
    RANK_EXPECT(std::string(strataGetLastError(comm)).find("any rank") != std::string::npos, "last error: %s",
                strataGetLastError(comm));
    RANK_EXPECT(from == -1, "peer %d after a failure", from);
    return problems;
  });
  EXPECT_TRUE(test::allSucceeded(outcomes)) << test::describe(outcomes);
}

TEST(RecvAnyErrors, SizeMismatchAndBadArguments) {
  test::RankSpec spec;
  spec.nranks = 2;
  spec.env = {{"STRATA_TIMEOUT_MS", "20000"}};
  auto outcomes = test::runRanks(spec, [](int rank, int, strataComm_t comm, const strataUniqueId&) {
    int problems = 0;
    std::vector<int32_t> buf(11, 5);
    int from = 7;
    if (rank == kReceiver) {
      RANK_EXPECT(strataRecvAny(buf.data(), 11, strataInt32, nullptr, comm, nullptr) == strataInvalidArgument,
                  "NULL peer accepted");
      RANK_EXPECT(strataRecvAny(buf.data(), 0, strataInt32, &from, comm, nullptr) == strataInvalidArgument,
                  "count 0 accepted");
      RANK_EXPECT(strataRecvAny(nullptr, 11, strataInt32, &from, comm, nullptr) == strataInvalidArgument,
                  "NULL buffer accepted");
      strataGroupStart();
      RANK_EXPECT(strataRecvAny(buf.data(), 11, strataInt32, &from, comm, nullptr) == strataInvalidUsage,
                  "accepted inside a group");
      strataGroupEnd();
      RANK_EXPECT(std::string(strataGetLastError(comm)).find("strataGroupStart") != std::string::npos,
                  "last error: %s", strataGetLastError(comm));
    }
    RANK_EXPECT(strataBarrier(comm, nullptr) == strataSuccess, "barrier: %s", strataGetLastError(comm));
    strataResult_t rc = rank == kReceiver ? strataRecvAny(buf.data(), 11, strataInt32, &from, comm, nullptr)
                                          : strataSend(buf.data(), 10, strataInt32, kReceiver, comm, nullptr);
    if (rank == kReceiver) {
      RANK_EXPECT(rc == strataMismatch, "10 sent, 11 expected gave %s: %s", strataGetErrorString(rc),
                  strataGetLastError(comm));
      RANK_EXPECT(std::string(strataGetLastError(comm)).find("count=10") != std::string::npos, "last error: %s",
                  strataGetLastError(comm));
    }
    return problems;
  });
  EXPECT_TRUE(test::allSucceeded(outcomes)) << test::describe(outcomes);
}

}  // namespace
}  // namespace strata
