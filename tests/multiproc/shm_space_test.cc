// /dev/shm too small (a container's default 64 MiB, many local ranks): the
// rank that cannot allocate a link's inbox and its peer both fail within
// seconds with an error naming the cause (not a SIGBUS when a slot's page is
// first touched, not a wait for the timeout for a link that will not come);
// smaller slots, as the message advises, fit and give the reference's
// results; strataMemAlloc of more than it holds is an error, not a SIGBUS at
// the first store. Each case runs in a child with a mount namespace of its
// own and a small tmpfs on /dev/shm (root, as the namespace tests need).
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "support/ranks.h"

namespace strata {
namespace {

constexpr int kNoNamespace = 77;

// Runs `body` in a child process whose /dev/shm is a fresh tmpfs of `size`
// (a tmpfs size option, e.g. "2m"); returns its exit code (128 + signal if
// it was killed), or kNoNamespace if this process may not make the mount.
int withDevShmOf(const char* size, const std::function<int()>& body) {
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    const std::string options = std::string("size=") + size;
    if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        mount("tmpfs", "/dev/shm", "tmpfs", 0, options.c_str()) != 0) {
      std::fprintf(stderr, "cannot mount a small /dev/shm in a namespace of its own: %s\n", std::strerror(errno));
      _exit(kNoNamespace);
    }
    int code = body();
    std::fflush(nullptr);
    _exit(code);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// An input value: random-looking, never zero, different per rank and index.
float inputOf(int rank, size_t i) {
  uint64_t x = (uint64_t(rank) + 1) * 0x9E3779B97F4A7C15ull ^ (i * 0xBF58476D1CE4E5B9ull);
  x ^= x >> 29;
  return float(2 * int64_t(x % 2001) - 2001) / 128.0f;  // an odd number of 128ths
}

// Both ranks call one all-reduce of `count` floats over shm with `env` and
// return what they found (0: as `expectFailure` wants).
int allReduceUnder(const test::Env& env, size_t count, bool expectFailure) {
  test::RankSpec spec;
  spec.nranks = 2;
  spec.env = env;
  spec.env["STRATA_TRANSPORT"] = "shm";
  spec.env["STRATA_TIMEOUT_MS"] = "60000";
  spec.deadlineSec = 60;
  auto outcomes = test::runRanks(spec, [&](int rank, int nranks, strataComm_t comm, const strataUniqueId&) {
    int problems = 0;
    std::vector<float> in(count), out(count, 0.0f);
    for (size_t i = 0; i < count; ++i) in[i] = inputOf(rank, i);
    auto start = std::chrono::steady_clock::now();
    strataResult_t rc = strataAllReduce(in.data(), out.data(), count, strataFloat32, strataSum, comm, nullptr);
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (expectFailure) {
      const std::string error = strataGetLastError(comm);
      RANK_EXPECT(rc == strataSystemError || rc == strataRemoteError, "got %s: %s", strataGetErrorString(rc),
                  error.c_str());
      RANK_EXPECT(error.find("/dev/shm is too small") != std::string::npos,
                  "the error does not name the cause: '%s'", error.c_str());
      RANK_EXPECT(took < 10.0, "the error took %.1f s (timeout is 60 s)", took);
      return problems;
    }
    RANK_EXPECT(rc == strataSuccess, "all-reduce: %s", strataGetLastError(comm));
    size_t wrong = 0;
    for (size_t i = 0; i < count; ++i) {
      double want = 0;
      for (int r = 0; r < nranks; ++r) want += double(inputOf(r, i));
      if (std::fabs(double(out[i]) - want) > 1e-5 * (1 + std::fabs(want))) ++wrong;
    }
    RANK_EXPECT(wrong == 0, "%zu of %zu results differ from the float64 reference", wrong, count);
    return problems;
  });
  if (!test::allSucceeded(outcomes)) {
    std::fprintf(stderr, "%s\n", test::describe(outcomes).c_str());
    return 1;
  }
  return 0;
}

TEST(SmallDevShm, EveryRankNamesTheCauseAtOnce) {
  // 2 MiB cannot hold one inbox of the default 8 slots of 512 KiB.
  int code = withDevShmOf("2m", [] { return allReduceUnder({}, 262147, true); });
  if (code == kNoNamespace) GTEST_SKIP() << "no mount namespace here (needs root): not checked";
  EXPECT_EQ(code, 0) << "see the ranks' messages above";
}

TEST(SmallDevShm, SmallerSlotsFitAndGiveTheReferenceResults) {
  // Two inboxes of 2 slots of 64 KiB each: about 260 KiB of the 2 MiB.
  int code = withDevShmOf("2m", [] {
    return allReduceUnder({{"STRATA_SHM_SLOTS", "2"}, {"STRATA_SHM_SLOT_BYTES", "65536"}}, 262147, false);
  });
  if (code == kNoNamespace) GTEST_SKIP() << "no mount namespace here (needs root): not checked";
  EXPECT_EQ(code, 0) << "see the ranks' messages above";
}

TEST(SmallDevShm, StrataMemAllocBeyondItFailsWithASentence) {
  int code = withDevShmOf("2m", [] {
    int problems = 0;
    const int rank = 0;  // for RANK_EXPECT
    void* p = nullptr;
    strataResult_t rc = strataMemAlloc(&p, 8 << 20);
    const std::string error = strataGetLastError(nullptr);
    RANK_EXPECT(rc == strataSystemError && p == nullptr, "8 MiB in a 2 MiB /dev/shm: got %s, %p",
                strataGetErrorString(rc), p);
    RANK_EXPECT(error.find("/dev/shm") != std::string::npos, "the error does not name /dev/shm: '%s'",
                error.c_str());
    // What fits is given, zero-filled, and can be written to its end.
    rc = strataMemAlloc(&p, 1 << 20);
    RANK_EXPECT(rc == strataSuccess && p, "1 MiB: %s", strataGetLastError(nullptr));
    if (rc == strataSuccess) {
      auto* bytes = static_cast<unsigned char*>(p);
      RANK_EXPECT(bytes[0] == 0 && bytes[(1 << 20) - 1] == 0, "not zero-filled");
      std::memset(bytes, 0x5a, 1 << 20);
      RANK_EXPECT(strataMemFree(p) == strataSuccess, "free: %s", strataGetLastError(nullptr));
    }
    return problems;
  });
  if (code == kNoNamespace) GTEST_SKIP() << "no mount namespace here (needs root): not checked";
  EXPECT_EQ(code, 0) << "see the messages above";
}

}  // namespace
}  // namespace strata
