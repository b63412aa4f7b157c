// Single copy between ranks of one host (transports/shm/single_copy.h), in
// real processes: a rank that dies with bytes lent, or during a shared read,
// is an error naming it on its peer, never a crash or a hang; a host that refuses cross-memory reads
// (here a seccomp filter, as containers' default profiles do) keeps every
// link on the ring, logs why, and gives the reference's results. The
// collectives matrix over single copy is in collectives_test.cc. Zero copy
// from strataMemAlloc memory: the matrix, bad calls, and memory allocated
// before the ranks were forked.
#include <gtest/gtest.h>
#include <dirent.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <cstring>
#include <vector>

#include "support/api_call.h"
#include "support/collective_cases.h"
#include "support/ranks.h"

namespace strata {
namespace {

// Makes `syscall` (process_vm_readv unless told) fail with EPERM in this process from now on.
bool refuseCrossMemoryReads(unsigned syscall = SYS_process_vm_readv) {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, syscall, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog program{static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
  return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) == 0;
}

// One rank of a matrix run: refuses cross-memory reads first (when asked),
// joins the communicator, and runs the cases `wanted` keeps (through
// `caller`), each checked against the reference. Returns the problems found.
int runCases(int rank, int n, const strataUniqueId& id, bool refuseCma,
             const std::function<bool(const test::Case&)>& wanted, const test::CaseCaller& caller = {}) {
  int problems = 0;
  if (refuseCma) RANK_EXPECT(refuseCrossMemoryReads(), "cannot install the seccomp filter");
  strataComm_t comm = nullptr;
  if (strataCommInitRank(&comm, n, id, rank) != strataSuccess) return 100;
  std::vector<test::Case> cases = test::allCases();
  for (size_t i = 0; i < cases.size(); ++i) {
    if (!wanted(cases[i])) continue;
    std::string err = test::runCase(cases[i], i, rank, n, comm, caller);
    RANK_EXPECT(err.empty(), "case %s: %s", test::describeCase(cases[i]).c_str(), err.c_str());
    if (problems > 5) break;
  }
  strataCommDestroy(comm);
  return problems;
}

// Calls f(path) for every file of `dir` (the ranks' log files).
void forEachFile(const std::string& dir, const std::function<void(const std::string&)>& f) {
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') f(dir + "/" + e->d_name);
    closedir(d);
  }
}

std::string readAll(const std::string& dir) {
  std::string all;
  forEachFile(dir, [&](const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    all += text.str();
  });
  return all;
}

// Two ranks over shared memory, lending from `lendFromBytes`: after a first
// all-reduce has made the link, both run `call` (which owns its buffers; rank
// 1 is the one whose bytes are lent). Rank 1 is killed 300 ms into its call,
// rank 0 starts its own a second later: it must return strataRemoteError
// naming rank 1 and the lent bytes, within 10 s, never crash or hang.
void expectADeathWithBytesLentIsAnError(const char* lendFromBytes,
                                        const std::function<strataResult_t(int rank, strataComm_t)>& call) {
  test::RankSpec spec;
  spec.nranks = 2;
  spec.env = {{"STRATA_TRANSPORT", "shm"}, {"STRATA_TIMEOUT_MS", "60000"},
              {"STRATA_SHM_SINGLE_COPY_BYTES", lendFromBytes}};
  spec.deadlineSec = 90;
  auto outcomes = test::runRanks(spec, [&call](int rank, int, strataComm_t comm, const strataUniqueId&) {
    int problems = 0;
    // Links are made at first use: make this one before anyone dies. An
    // all-reduce, not a broadcast: rank 1 returns from it only once rank 0 has
    // finished setting the link up (and said it can read rank 1's memory), so
    // that rank 1 lends from its next call's first bytes.
    float one = float(rank + 1), sum = 0;
    RANK_EXPECT(strataAllReduce(&one, &sum, 1, strataFloat32, strataSum, comm, nullptr) == strataSuccess,
                "the first all-reduce failed: %s", strataGetLastError(comm));
    if (rank == 1) {
      // Rank 1 lends its buffer and waits for rank 0, which is late: it dies
      // meanwhile, its lent bytes gone with it.
      std::thread([] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        raise(SIGKILL);
      }).detach();
      call(rank, comm);
      std::this_thread::sleep_for(std::chrono::seconds(30));
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    auto start = std::chrono::steady_clock::now();
    strataResult_t rc = call(rank, comm);
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

// A 16 MiB broadcast (more than the ring holds) from rank 1, lent from its
// first bytes.
TEST(SingleCopy, ARankThatDiesWithBytesLentIsAnErrorNamingIt) {
  expectADeathWithBytesLentIsAnError("1", [](int rank, strataComm_t comm) {
    std::vector<float> data(1 << 22, float(rank + 1));
    return strataBroadcast(data.data(), data.data(), data.size(), strataFloat32, 1, comm, nullptr);
  });
}

// A block of one fragment (a 2-rank all-gather's 128 KiB, at most
// kMaxFragment) is lent whole, its descriptor sent alone, where the link
// lends from its size: so when its rank dies before the peer reads it, the
// peer's error is about the lent bytes. Riding with the descriptor, the block
// went through the ring, and the peer finished with it (fails so before the
// executor asked the link: descGoesAlone).
TEST(SingleCopy, AOneFragmentBlockIsLentWhole) {
  expectADeathWithBytesLentIsAnError("65536", [](int rank, strataComm_t comm) {
    const size_t block = 32768;  // floats: 128 KiB
    std::vector<float> mine(block, float(rank + 1)), all(2 * block);
    return strataAllGather(mine.data(), all.data(), block, strataFloat32, comm, nullptr);
  });
}

// Shared reads (shm_ring.h: ShmSharedRead): 2-rank broadcasts of 16 MiB,
// whose root helps its receiver read them, first checked against the
// root's random data, in and out of place; then one rank, the root or the
// receiver, is killed during a stream of them, most likely in the middle of
// one: the survivor returns strataRemoteError naming it, promptly. A root
// whose writes into the receiver are refused (seccomp) leaves the receiver
// to read alone, with the same results.
TEST(SingleCopy, SharedReadsAreRightAndADeathDuringOneIsAnError) {
  for (int victim : {-1, 0, 1}) {
    SCOPED_TRACE(victim == 1 ? "the root dies" : victim == 0 ? "the receiver dies" : "the root may not write");
    test::RankSpec spec;
    spec.nranks = 2;
    spec.env = {{"STRATA_TRANSPORT", "shm"}, {"STRATA_TIMEOUT_MS", "60000"}};
    spec.deadlineSec = 90;
    auto outcomes = test::runRanks(spec, [victim](int rank, int, strataComm_t comm, const strataUniqueId&) {
      int problems = 0;
      // The root's process_vm_writev refused (victim -1): it cannot help, and
      // the receiver reads every region alone.
      if (victim < 0 && rank == 1) RANK_EXPECT(refuseCrossMemoryReads(SYS_process_vm_writev), "no seccomp filter");
      const size_t count = (size_t(1) << 22) + 3;  // 16 MiB and an odd tail
      std::vector<float> want(count), send(count), out(count);
      std::mt19937 rng(77);
      std::uniform_real_distribution<float> value(-8.f, 8.f);
      for (float& x : want) x = value(rng);
      if (rank == 1) send = want;
      for (bool inPlace : {false, true}) {
        for (int call = 0; call < 3; ++call) {
          std::fill(out.begin(), out.end(), -1.f);
          if (inPlace && rank == 1) out = want;
          strataResult_t rc = strataBroadcast(inPlace ? out.data() : send.data(), out.data(), count, strataFloat32,
                                              1, comm, nullptr);
          RANK_EXPECT(rc == strataSuccess, "broadcast failed: %s", strataGetLastError(comm));
          if (rc != strataSuccess) return problems;
          RANK_EXPECT(out == want, "call %d (%s) differs from the root's data", call, inPlace ? "in place" : "out of place");
        }
      }
      if (victim < 0) return problems;
      if (rank == victim) {
        std::thread([] {
          std::this_thread::sleep_for(std::chrono::milliseconds(150));
          raise(SIGKILL);
        }).detach();
      }
      auto start = std::chrono::steady_clock::now();
      strataResult_t rc = strataSuccess;
      for (int call = 0; call < 100000 && rc == strataSuccess; ++call)
        rc = strataBroadcast(send.data(), out.data(), count, strataFloat32, 1, comm, nullptr);
      if (rank == victim) return 1;  // not reached: killed meanwhile
      const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const std::string error = strataGetLastError(comm);
      RANK_EXPECT(rc == strataRemoteError, "got %s: %s", strataGetErrorString(rc), error.c_str());
      RANK_EXPECT(error.find("rank " + std::to_string(victim)) != std::string::npos,
                  "the error does not name rank %d: '%s'", victim, error.c_str());
      RANK_EXPECT(took < 10.0, "the error took %.1f s", took);
      strataCommAbort(comm);
      std::fflush(stderr);
      _exit(problems);
    });
    if (victim < 0) {
      EXPECT_TRUE(test::allSucceeded(outcomes)) << test::describe(outcomes);
      continue;
    }
    EXPECT_EQ(outcomes[size_t(victim)].exitCode, 128 + SIGKILL) << test::describe(outcomes);
    EXPECT_EQ(outcomes[size_t(1 - victim)].exitCode, 0) << test::describe(outcomes);
  }
}

// Each all-gather algorithm, forced, with slices larger than a link holds
// (STRATA_CHUNK_BYTES 16 MiB) on 2 and 4 ranks, with single copy as measured
// and off: a flow whose descriptor goes in a packet of its own (its peer
// reads meanwhile) must not take a slot that a ring's send-only phase counts
// on (that deadlocked once); results equal every rank's random block.
TEST(SingleCopy, AllGatherSlicesLargerThanALinkKeepMoving) {
  for (const char* algo : {"ring", "recursive_doubling"})
    for (int n : {2, 4})
      for (const char* singleCopy : {"1", "0"}) {
        SCOPED_TRACE(std::string(algo) + " on " + std::to_string(n) + " ranks, STRATA_SHM_SINGLE_COPY=" + singleCopy);
        test::RankSpec spec;
        spec.nranks = n;
        spec.env = {{"STRATA_TRANSPORT", "shm"}, {"STRATA_TIMEOUT_MS", "20000"}, {"STRATA_ALGO", algo},
                    {"STRATA_CHUNK_BYTES", "16777216"}, {"STRATA_SHM_SINGLE_COPY", singleCopy}};
        spec.deadlineSec = 90;
        auto outcomes = test::runRanks(spec, [](int rank, int nranks, strataComm_t comm, const strataUniqueId&) {
          int problems = 0;
          // 4 MiB a rank: the ring's slices (the chunk capped at what a link
          // holds, 8 slots of 256 KiB) are then exactly 8 fragments, the case
          // in which one packet more does not fit.
          const size_t count = 1048576;
          auto blockOf = [&](int q) {
            std::mt19937 rng(uint32_t(1000 + q));
            std::uniform_real_distribution<float> value(-8.f, 8.f);
            std::vector<float> b(count);
            for (float& x : b) x = value(rng);
            return b;
          };
          const std::vector<float> mine = blockOf(rank);
          for (bool inPlace : {false, true}) {
            std::vector<float> out(count * size_t(nranks), 0.f);
            if (inPlace) std::copy(mine.begin(), mine.end(), out.begin() + ptrdiff_t(count * size_t(rank)));
            const float* send = inPlace ? out.data() + count * size_t(rank) : mine.data();
            for (int call = 0; call < 2; ++call) {
              strataResult_t rc = strataAllGather(send, out.data(), count, strataFloat32, comm, nullptr);
              RANK_EXPECT(rc == strataSuccess, "all-gather failed: %s", strataGetLastError(comm));
              if (rc != strataSuccess) return problems;
            }
            for (int q = 0; q < nranks; ++q) {
              const std::vector<float> want = blockOf(q);
              RANK_EXPECT(std::equal(want.begin(), want.end(), out.begin() + ptrdiff_t(count * size_t(q))),
                          "block %d differs (%s)", q, inPlace ? "in place" : "out of place");
            }
          }
          return problems;
        });
        EXPECT_TRUE(test::allSucceeded(outcomes)) << test::describe(outcomes);
      }
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
    return runCases(rank, n, id, true, [](const test::Case& c) {
      return c.dtype == strataFloat32 || c.dtype == strataInt64;
    });
  });
  EXPECT_TRUE(test::allSucceeded(outcomes)) << test::describe(outcomes);
  const std::string log = readAll(dir);
  EXPECT_NE(log.find("shm single copy: off: process_vm_readv refused: Operation not permitted"), std::string::npos)
      << log;
  EXPECT_EQ(log.find("shm single copy: from"), std::string::npos) << log;
  std::system((std::string("rm -rf ") + dir).c_str());
}

// The decisions each process that logged one wrote in its file of `dir`:
// what follows "shm single copy: ", one line each.
std::vector<std::string> singleCopyDecisions(const std::string& dir) {
  std::vector<std::string> decisions;
  forEachFile(dir, [&](const std::string& path) {
    std::ifstream in(path);
    std::string line, found;
    const std::string marker = "shm single copy: ";
    while (std::getline(in, line))
      if (size_t at = line.find(marker); at != std::string::npos) found += line.substr(at + marker.size()) + "\n";
    if (!found.empty()) decisions.push_back(found);
  });
  return decisions;
}

// Measured single copy (no STRATA_SHM_SINGLE_COPY_BYTES): each process
// measures its own copy rates, and the two sides of a link decide from the
// same figures (agreedSingleCopyCosts), so both ranks log one and the same
// decision, and the results match the reference over it. Every call over
// 4 KiB writes its outputs streaming (STRATA_STREAM_OUTPUT_BYTES), so the
// all-gathers' and all-to-alls' sends are weighed by the rates measured out
// of the cache (single_copy.h: againstTwoCopiesStreamed).
TEST(SingleCopy, BothSidesOfALinkDecideAlikeFromTheirMeasurements) {
  char dir[] = "/tmp/strata-single-copy-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  test::RankSpec spec;
  spec.nranks = 2;
  spec.initComm = false;
  spec.env = {{"STRATA_TRANSPORT", "shm"}, {"STRATA_TIMEOUT_MS", "60000"}, {"STRATA_DEBUG", "INFO"},
              {"STRATA_DEBUG_FILE", std::string(dir) + "/log.%p"}, {"STRATA_STREAM_OUTPUT_BYTES", "4096"}};
  spec.deadlineSec = 300;
  auto outcomes = test::runRanks(spec, [](int rank, int n, strataComm_t, const strataUniqueId& id) {
    return runCases(rank, n, id, false, [](const test::Case& c) { return c.dtype == strataFloat32; });
  });
  EXPECT_TRUE(test::allSucceeded(outcomes)) << test::describe(outcomes);
  const std::vector<std::string> decisions = singleCopyDecisions(dir);
  ASSERT_EQ(decisions.size(), 2u) << readAll(dir);
  EXPECT_NE(decisions[0].find("measured on this host"), std::string::npos) << decisions[0];
  EXPECT_NE(decisions[0].find("out of the cache process_vm_readv"), std::string::npos) << decisions[0];
  EXPECT_EQ(decisions[0], decisions[1]) << "the two ranks of one link decided differently";
  std::system((std::string("rm -rf ") + dir).c_str());
}

// strataMemAlloc memory (transports/shm/mapped_memory.h): the same matrix
// with every buffer in regions the peers map, lent by name from the smallest
// packet on; with cross-memory reads refused (mapping needs no ptrace
// permission), and with single copy off (the ring then moves the same bytes).
struct MappedScenario {
  int nranks;
  bool refuseCma;
  bool singleCopy;
  const char* label;
};

class MappedMemory : public ::testing::TestWithParam<MappedScenario> {};

// Runs a case with its buffers copied into strataMemAlloc memory (at the
// same offsets) and its output copied back.
strataResult_t callOnMappedMemory(const test::Case& c, int root, std::vector<uint8_t>& sendMem,
                                  std::vector<uint8_t>& recvMem, const void* sendArg, void* recvArg,
                                  strataComm_t comm) {
  void *send = nullptr, *recv = nullptr;
  if (strataMemAlloc(&send, sendMem.size()) != strataSuccess) return strataSystemError;
  if (strataMemAlloc(&recv, recvMem.size()) != strataSuccess) return strataSystemError;
  std::memcpy(send, sendMem.data(), sendMem.size());
  std::memcpy(recv, recvMem.data(), recvMem.size());
  auto inRecv = [&](const void* p) { return p >= recvMem.data() && p < recvMem.data() + recvMem.size(); };
  auto moved = [&](const void* p) -> uint8_t* {  // the same offset in the mapped copy
    if (!p) return nullptr;
    const auto* b = static_cast<const uint8_t*>(p);
    return inRecv(p) ? static_cast<uint8_t*>(recv) + (b - recvMem.data())
                     : static_cast<uint8_t*>(send) + (b - sendMem.data());
  };
  strataResult_t rc = test::callCollective(c.coll, moved(sendArg), moved(recvArg), c.count, c.dtype, c.op, root, comm);
  std::memcpy(recvMem.data(), recv, recvMem.size());
  strataMemFree(send);
  strataMemFree(recv);
  return rc;
}

TEST_P(MappedMemory, EveryCollectiveOnStrataMemAllocBuffersMatchesReference) {
  const MappedScenario s = GetParam();
  char dir[] = "/tmp/strata-mapped-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  test::RankSpec spec;
  spec.nranks = s.nranks;
  spec.initComm = false;
  spec.env = {{"STRATA_TRANSPORT", "shm"}, {"STRATA_TIMEOUT_MS", "60000"}, {"STRATA_SHM_SINGLE_COPY_BYTES", "1"},
              {"STRATA_SHM_SINGLE_COPY", s.singleCopy ? "1" : "0"}, {"STRATA_DEBUG", "INFO"},
              {"STRATA_DEBUG_FILE", std::string(dir) + "/log.%p"}};
  spec.deadlineSec = 300;
  const bool refuse = s.refuseCma;
  auto outcomes = test::runRanks(spec, [refuse](int rank, int n, strataComm_t, const strataUniqueId& id) {
    return runCases(rank, n, id, refuse, [n](const test::Case& c) {
      return n <= 2 || c.dtype == strataFloat32 || c.dtype == strataInt64 || c.dtype == strataFloat16;
    }, callOnMappedMemory);
  });
  EXPECT_TRUE(test::allSucceeded(outcomes)) << test::describe(outcomes);
  const std::string log = readAll(dir);
  const bool readInPlace = log.find("strataMemAlloc memory /strata-mem-") != std::string::npos;
  EXPECT_EQ(readInPlace, s.singleCopy && s.nranks > 1) << log.substr(0, 4000);
  std::system((std::string("rm -rf ") + dir).c_str());
}

INSTANTIATE_TEST_SUITE_P(Placements, MappedMemory,
                         ::testing::Values(MappedScenario{1, false, true, "1rank"},
                                           MappedScenario{2, false, true, "2ranks"},
                                           MappedScenario{3, true, true, "3ranks_cma_refused"},
                                           MappedScenario{5, false, true, "5ranks"},
                                           MappedScenario{3, false, false, "3ranks_single_copy_off"}),
                         [](const auto& info) { return std::string(info.param.label); });

TEST(MappedMemory, BadCallsAreRefusedWithASentence) {
  void* p = reinterpret_cast<void*>(1);
  EXPECT_EQ(strataMemAlloc(nullptr, 64), strataInvalidArgument);
  EXPECT_NE(std::string(strataGetLastError(nullptr)).find("ptr is NULL"), std::string::npos);
  EXPECT_EQ(strataMemAlloc(&p, 0), strataInvalidArgument);
  EXPECT_EQ(p, nullptr);
  EXPECT_NE(std::string(strataGetLastError(nullptr)).find("size is 0"), std::string::npos);
  ASSERT_EQ(strataMemAlloc(&p, 5000), strataSuccess);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 4096, 0u);
  for (size_t i = 0; i < 5000; ++i) ASSERT_EQ(static_cast<uint8_t*>(p)[i], 0) << "byte " << i;
  std::memset(p, 0x5a, 5000);
  int onStack = 0;
  EXPECT_EQ(strataMemFree(&onStack), strataInvalidArgument);
  EXPECT_NE(std::string(strataGetLastError(nullptr)).find("was not returned by strataMemAlloc"), std::string::npos);
  EXPECT_EQ(strataMemFree(static_cast<uint8_t*>(p) + 64), strataInvalidArgument);  // inside, not the start
  EXPECT_EQ(strataMemFree(p), strataSuccess);
  EXPECT_EQ(strataMemFree(p), strataInvalidArgument);  // twice
  EXPECT_EQ(strataMemFree(nullptr), strataSuccess);
  const std::string name = "/dev/shm/strata-mem-" + std::to_string(getpid()) + "-";
  DIR* d = opendir("/dev/shm");
  ASSERT_NE(d, nullptr);
  while (dirent* e = readdir(d))
    EXPECT_NE(("/dev/shm/" + std::string(e->d_name)).rfind(name, 0), 0u) << "left behind: " << e->d_name;
  closedir(d);
}

// strataMemAlloc memory allocated before the ranks were forked (a launcher
// that allocates, then forks its workers): the children share it, but the
// region's name is the parent's, so a child must send from it as from any
// other memory (the peer refused the child's lent name before: "lent bytes
// outside a region of its own").
TEST(MappedMemory, MemoryAllocatedBeforeForkingIsSentAsOrdinaryMemory) {
  const int nranks = 3;
  const size_t count = 300007;  // floats: above the 64 KiB from which mapped memory is lent
  // Per rank: its input, its all-gather output (nranks blocks), its broadcast output.
  const size_t perRank = count * size_t(nranks + 2);
  void* shared = nullptr;
  ASSERT_EQ(strataMemAlloc(&shared, nranks * perRank * sizeof(float)), strataSuccess) << strataGetLastError(nullptr);
  test::RankSpec spec;
  spec.nranks = nranks;
  spec.env = {{"STRATA_TRANSPORT", "shm"}};
  auto outcomes = test::runRanks(spec, [&](int rank, int n, strataComm_t comm, const strataUniqueId&) {
    int problems = 0;
    auto valueOf = [](int r, size_t i) { return float((r + 1) * 1000 + int(i % 997)) + 0.25f; };
    float* mine = static_cast<float*>(shared) + size_t(rank) * perRank;  // each rank its own slices
    float* all = mine + count;
    float* root = all + size_t(n) * count;
    for (size_t i = 0; i < count; ++i) mine[i] = valueOf(rank, i);
    RANK_EXPECT(strataAllGather(mine, all, count, strataFloat32, comm, nullptr) == strataSuccess,
                "all-gather: %s", strataGetLastError(comm));
    RANK_EXPECT(strataBroadcast(mine, root, count, strataFloat32, 1, comm, nullptr) == strataSuccess,
                "broadcast: %s", strataGetLastError(comm));
    size_t wrong = 0;
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i) wrong += all[size_t(r) * count + i] != valueOf(r, i);
    for (size_t i = 0; i < count; ++i) wrong += root[i] != valueOf(1, i);
    RANK_EXPECT(wrong == 0, "%zu values differ from what the ranks wrote", wrong);
    return problems;
  });
  EXPECT_TRUE(test::allSucceeded(outcomes)) << test::describe(outcomes);
  // The children left the name alone; freeing it here removes it.
  auto namesOfThisProcess = [] {
    const std::string prefix = "strata-mem-" + std::to_string(getpid()) + "-";
    int found = 0;
    if (DIR* d = opendir("/dev/shm")) {
      while (dirent* e = readdir(d)) found += std::string(e->d_name).rfind(prefix, 0) == 0;
      closedir(d);
    }
    return found;
  };
  EXPECT_EQ(namesOfThisProcess(), 1);
  EXPECT_EQ(strataMemFree(shared), strataSuccess);
  EXPECT_EQ(namesOfThisProcess(), 0);
}

}  // namespace
}  // namespace strata
