// Single copy between ranks of one host (transports/shm/single_copy.h), in
// real processes: a rank that dies with bytes lent is an error naming it on
// its peer, never a crash or a hang; a host that refuses cross-memory reads
// (here a seccomp filter, as containers' default profiles do) keeps every
// link on the ring, logs why, and gives the reference's results. The
// collectives matrix over single copy is in collectives_test.cc.
#include <gtest/gtest.h>
#include <dirent.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/collective_cases.h"
#include "support/ranks.h"

namespace strata {
namespace {

// Makes process_vm_readv fail with EPERM in this process from now on.
bool refuseCrossMemoryReads() {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog program{static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) == 0;
}

std::string readAll(const std::string& dir) {
  std::string all;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::ifstream in(dir + "/" + e->d_name);
      std::stringstream text;
      text << in.rdbuf();
      all += text.str();
    }
    closedir(d);
  }
  return all;
}

TEST(SingleCopy, ARankThatDiesWithBytesLentIsAnErrorNamingIt) {
  test::RankSpec spec;
  spec.nranks = 2;
  spec.env = {{"STRATA_TRANSPORT", "shm"}, {"STRATA_TIMEOUT_MS", "60000"}, {"STRATA_SHM_SINGLE_COPY_BYTES", "1"}};
  spec.deadlineSec = 90;
  auto outcomes = test::runRanks(spec, [](int rank, int, strataComm_t comm, const strataUniqueId&) {
    int problems = 0;
    std::vector<float> data(1 << 22, float(rank + 1));  // 16 MiB: more than the ring holds
    // Links are made at first use: make this one before anyone dies.
    RANK_EXPECT(strataBroadcast(data.data(), data.data(), 1, strataFloat32, 1, comm, nullptr) == strataSuccess,
                "the first broadcast failed: %s", strataGetLastError(comm));
    if (rank == 1) {
      // The root lends its buffer and waits for rank 0, which is late: it
      // dies meanwhile, its lent bytes gone with it.
      std::thread([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        raise(SIGKILL);
      }).detach();
      strataBroadcast(data.data(), data.data(), data.size(), strataFloat32, 1, comm, nullptr);
      std::this_thread::sleep_for(std::chrono::seconds(30));
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    auto start = std::chrono::steady_clock::now();
    strataResult_t rc = strataBroadcast(data.data(), data.data(), data.size(), strataFloat32, 1, comm, nullptr);
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string error = strataGetLastError(comm);
    RANK_EXPECT(rc == strataRemoteError, "got %s: %s", strataGetErrorString(rc), error.c_str());
    RANK_EXPECT(error.find("rank 1") != std::string::npos, "the error does not name rank 1: '%s'", error.c_str());
    RANK_EXPECT(error.find("lent") != std::string::npos, "the error is not about the lent bytes: '%s'", error.c_str());
    RANK_EXPECT(took < 10.0, "the error took %.1f s", took);
    strataCommAbort(comm);
    std::fflush(stderr);
    _exit(problems);
  });
  EXPECT_EQ(outcomes[1].exitCode, 128 + SIGKILL) << test::describe(outcomes);
  EXPECT_EQ(outcomes[0].exitCode, 0) << test::describe(outcomes);
}

TEST(SingleCopy, RefusedCrossMemoryReadsKeepTheRingAndTheResults) {
  char dir[] = "/tmp/strata-single-copy-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  test::RankSpec spec;
  spec.nranks = 3;
  spec.initComm = false;
  spec.env = {{"STRATA_TRANSPORT", "shm"}, {"STRATA_TIMEOUT_MS", "60000"}, {"STRATA_SHM_SINGLE_COPY_BYTES", "1"},
              {"STRATA_DEBUG", "INFO"}, {"STRATA_DEBUG_FILE", std::string(dir) + "/log.%p"}};
  spec.deadlineSec = 300;
  auto outcomes = test::runRanks(spec, [](int rank, int n, strataComm_t, const strataUniqueId& id) {
    int problems = 0;
    RANK_EXPECT(refuseCrossMemoryReads(), "cannot install the seccomp filter");
    strataComm_t comm = nullptr;
    if (strataCommInitRank(&comm, n, id, rank) != strataSuccess) return 100;
    std::vector<test::Case> cases = test::allCases();
    for (size_t i = 0; i < cases.size(); ++i) {
      if (cases[i].dtype != strataFloat32 && cases[i].dtype != strataInt64) continue;
      std::string err = test::runCase(cases[i], i, rank, n, comm);
      RANK_EXPECT(err.empty(), "case %s: %s", test::describeCase(cases[i]).c_str(), err.c_str());
      if (problems > 5) break;
    }
    strataCommDestroy(comm);
    return problems;
  });
  EXPECT_TRUE(test::allSucceeded(outcomes)) << test::describe(outcomes);
  const std::string log = readAll(dir);
  EXPECT_NE(log.find("shm single copy: off: process_vm_readv refused: Operation not permitted"), std::string::npos)
      << log;
  EXPECT_EQ(log.find("shm single copy: from"), std::string::npos) << log;
  std::system((std::string("rm -rf ") + dir).c_str());
}

}  // namespace
}  // namespace strata
