// Collectives on CUDA device buffers, in real processes sharing one GPU (the
// way a GPU machine with one device tests them): every case of the
// multi-process matrix (support/collective_cases.h) on 2, 3 and 4 ranks with
// the buffers copied to the device and the call enqueued on a stream; stream
// semantics (the call returns while its stream is still busy, and work
// enqueued after it sees the result); groups (one of 1000 small tensors, packed
// by the multi-copy kernel); a host call after device calls;
// refusals (mixed memory, graph capture, receive-any); a killed peer reported
// through strataCommGetAsyncError without any stream left hanging.
//
// The parent process never initialises CUDA (a forked rank could not use it
// then): whether a GPU is visible is asked in a child of its own.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "core/dtype.h"
#include "kernels/cuda/cuda_kernels.h"
#include "support/api_call.h"
#include "support/collective_cases.h"
#include "support/ranks.h"
#include "support/reference.h"

namespace strata {
namespace {

int devicesSeenByAChild() {
  pid_t pid = fork();
  if (pid == 0) _exit(std::min(cuda::visibleDevices(), 100));
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return 0;
  return WEXITSTATUS(status);
}

#define SKIP_WITHOUT_GPU()                                                                              \
  if (devicesSeenByAChild() == 0)                                                                       \
  GTEST_SKIP() << "no CUDA device visible: the GPU tests need one (scripts/gpu-check.sh runs them on a " \
                  "GPU machine)"

// Inside a rank body: counts a failed CUDA call as a problem and returns.
#define RANK_CUDA(call)                                                                          \
  do {                                                                                           \
    cudaError_t e_ = (call);                                                                     \
    if (e_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "rank %d: %s: %s\n", rank, #call, cudaGetErrorString(e_));            \
      return problems + 1;                                                                       \
    }                                                                                            \
  } while (0)

// Waits until the set-up's plain cudaMemcpy / cudaMemset calls have landed.
// They go on the legacy default stream and may return before their bytes are
// written (a copy from pageable memory once staged, a fill at once), and the
// tests' non-blocking streams do not wait for that stream.
cudaError_t landed() { return cudaDeviceSynchronize(); }

// Runs a case's call on device copies of its buffers, enqueued on `stream`,
// and brings the output back once the stream is done.
test::CaseCaller onDevice(cudaStream_t stream) {
  return [stream](const test::Case& c, int root, std::vector<uint8_t>& sendMem, std::vector<uint8_t>& recvMem,
                  const void* sendArg, void* recvArg, strataComm_t comm) -> strataResult_t {
    uint8_t *dSend = nullptr, *dRecv = nullptr;
    if (cudaMalloc(&dSend, sendMem.size()) != cudaSuccess || cudaMalloc(&dRecv, recvMem.size()) != cudaSuccess)
      return strataSystemError;
    cudaMemcpy(dSend, sendMem.data(), sendMem.size(), cudaMemcpyHostToDevice);
    cudaMemcpy(dRecv, recvMem.data(), recvMem.size(), cudaMemcpyHostToDevice);
    landed();
    auto onDev = [&](const void* p) -> uint8_t* {
      auto* b = static_cast<const uint8_t*>(p);
      if (b >= sendMem.data() && b < sendMem.data() + sendMem.size()) return dSend + (b - sendMem.data());
      return dRecv + (b - recvMem.data());
    };
    strataResult_t rc = test::callCollective(c.coll, onDev(sendArg), onDev(recvArg), c.count, c.dtype, c.op, root,
                                             comm, stream);
    if (cudaStreamSynchronize(stream) != cudaSuccess) rc = strataSystemError;
    cudaMemcpy(recvMem.data(), dRecv, recvMem.size(), cudaMemcpyDeviceToHost);
    cudaFree(dSend);
    cudaFree(dRecv);
    return rc;
  };
}

struct DeviceScenario {
  int nranks;
  const char* stagingBytes;  // STRATA_DEVICE_STAGING_BYTES: small ones cut calls into many pieces
  const char* cudaIpc;       // STRATA_CUDA_IPC: "1" reads the peers' slots, "0" stages through the host
  const char* label;
  const char* topology = nullptr;  // STRATA_TOPO_FILE's contents: ranks on pretend nodes
};

// Pretend nodes for the device matrix: 2 x 2 placed round-robin (all-reduce
// runs over IPC within each node and between nodes through the host), and
// 3 + 1 (uneven: everything stages through the host).
const char* kTwoByTwoRoundRobin =
    R"({"ranks": [{"node": 0}, {"node": 1}, {"node": 0}, {"node": 1}],
        "links": {"intra": {"alpha_us": 1.5, "gbps": 8}, "inter": {"alpha_us": 20, "gbps": 0.5}}})";
const char* kThreePlusOne =
    R"({"ranks": [{"node": 0}, {"node": 0}, {"node": 1}, {"node": 0}],
        "links": {"intra": {"alpha_us": 1.5, "gbps": 8}, "inter": {"alpha_us": 20, "gbps": 0.5}}})";

void PrintTo(const DeviceScenario& s, std::ostream* os) { *os << s.label; }

class DeviceCollectives : public ::testing::TestWithParam<DeviceScenario> {};

TEST_P(DeviceCollectives, EveryCaseMatchesTheReference) {
  SKIP_WITHOUT_GPU();
  const DeviceScenario s = GetParam();
  test::RankSpec spec;
  spec.nranks = s.nranks;
  spec.env = {{"STRATA_TIMEOUT_MS", "60000"}, {"STRATA_DEVICE_STAGING_BYTES", s.stagingBytes},
              {"STRATA_CUDA_IPC", s.cudaIpc}};
  const std::string topoFile = ::testing::TempDir() + "strata_device_topo_" + s.label + ".json";
  if (s.topology) {
    FILE* f = std::fopen(topoFile.c_str(), "w");
    ASSERT_TRUE(f) << topoFile;
    std::fputs(s.topology, f);
    std::fclose(f);
    spec.env["STRATA_TOPO_FILE"] = topoFile;
  }
  spec.deadlineSec = 600;
  auto outcomes = test::runRanks(spec, [](int rank, int n, strataComm_t comm, const strataUniqueId&) {
    int problems = 0;
    RANK_CUDA(cudaSetDevice(0));
    cudaStream_t stream;
    RANK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    std::vector<test::Case> cases = test::allCases();
    for (size_t i = 0; i < cases.size(); ++i) {
      std::string err = test::runCase(cases[i], i, rank, n, comm, onDevice(stream));
      if (!err.empty()) {
        std::fprintf(stderr, "rank %d case %zu %s: %s\n", rank, i, test::describeCase(cases[i]).c_str(), err.c_str());
        if (++problems > 5 || err.find("returned") == 0) return problems;
      }
    }
    cudaStreamDestroy(stream);
    return problems;
  });
  if (s.topology) std::remove(topoFile.c_str());
  EXPECT_TRUE(test::allSucceeded(outcomes)) << test::describe(outcomes);
}

INSTANTIATE_TEST_SUITE_P(SharedGpu, DeviceCollectives,
                         ::testing::Values(DeviceScenario{1, "65536", "1", "1rank"},
                                           DeviceScenario{2, "8388608", "1", "2ranks_ipc"},
                                           DeviceScenario{3, "65536", "1", "3ranks_ipc_small_slots"},
                                           DeviceScenario{4, "65536", "1", "4ranks_ipc_small_slots"},
                                           DeviceScenario{2, "8388608", "0", "2ranks_host_staging"},
                                           DeviceScenario{3, "65536", "0", "3ranks_host_staging_small"},
                                           DeviceScenario{4, "65536", "1", "2x2nodes_ipc_small_slots",
                                                          kTwoByTwoRoundRobin},
                                           DeviceScenario{4, "65536", "1", "3plus1nodes_small_slots",
                                                          kThreePlusOne}),
                         [](const auto& info) { return std::string(info.param.label); });

void CUDART_CB sleepOnTheStream(void* ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(reinterpret_cast<intptr_t>(ms)));
}

// The input is produced by work on the stream, the stream is held up for
// 300 ms before the call, the call must return long before that, and a copy
// enqueued after it (no host synchronisation in between) sees the result.
TEST(DeviceStreams, TheCallReturnsAtOnceAndLaterWorkOnTheStreamSeesTheResult) {
  SKIP_WITHOUT_GPU();
  test::RankSpec spec;
  spec.nranks = 3;
  auto outcomes = test::runRanks(spec, [](int rank, int n, strataComm_t comm, const strataUniqueId&) {
    int problems = 0;
    const size_t count = 3 * 1048576 + 7;
    RANK_CUDA(cudaSetDevice(0));
    cudaStream_t stream;
    RANK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    std::vector<std::vector<float>> inputs(static_cast<size_t>(n), std::vector<float>(count));
    std::vector<const void*> ptrs;
    for (int r = 0; r < n; ++r) {
      test::fillRandom(strataFloat32, strataSum, inputs[size_t(r)].data(), count, 100 + size_t(r));
      ptrs.push_back(inputs[size_t(r)].data());
    }
    float *source, *send, *recv, *later, *back;
    RANK_CUDA(cudaMalloc(&source, count * 4));
    RANK_CUDA(cudaMalloc(&send, count * 4));
    RANK_CUDA(cudaMalloc(&recv, count * 4));
    RANK_CUDA(cudaMalloc(&later, count * 4));
    RANK_CUDA(cudaMallocHost(&back, count * 4));
    RANK_CUDA(cudaMemcpy(source, inputs[size_t(rank)].data(), count * 4, cudaMemcpyHostToDevice));
    RANK_CUDA(cudaMemset(send, 0, count * 4));
    RANK_CUDA(landed());
    // The first device collective of a communicator maps the peers' staging
    // slots (once, like NCCL's first call sets up its connections); the
    // promise is about every call after it.
    RANK_EXPECT(strataAllReduce(later, later, 1, strataFloat32, strataSum, comm, stream) == strataSuccess, "%s",
                strataGetLastError(comm));
    RANK_CUDA(cudaStreamSynchronize(stream));
    RANK_CUDA(cudaLaunchHostFunc(stream, sleepOnTheStream, reinterpret_cast<void*>(intptr_t(300))));
    cuda::ReduceCopyArgs produce;
    produce.src[0] = source;
    produce.dst[0] = send;
    produce.nsrc = produce.ndst = 1;
    produce.count = count;
    RANK_EXPECT(cuda::enqueueReduceCopy(produce, strataFloat32, strataSum, stream).empty(), "producer launch");
    auto start = std::chrono::steady_clock::now();
    strataResult_t rc = strataAllReduce(send, recv, count, strataFloat32, strataSum, comm, stream);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    RANK_EXPECT(rc == strataSuccess, "%s", strataGetLastError(comm));
    RANK_EXPECT(ms < 100, "the call took %.1f ms while its stream was held up for 300 ms", ms);
    cudaError_t pending = cudaStreamQuery(stream);
    RANK_EXPECT(pending == cudaErrorNotReady, "the stream finished before the call returned");
    cuda::ReduceCopyArgs consume;
    consume.src[0] = recv;
    consume.dst[0] = later;
    consume.nsrc = consume.ndst = 1;
    consume.count = count;
    RANK_EXPECT(cuda::enqueueReduceCopy(consume, strataFloat32, strataSum, stream).empty(), "consumer launch");
    RANK_CUDA(cudaMemcpyAsync(back, later, count * 4, cudaMemcpyDeviceToHost, stream));
    RANK_CUDA(cudaStreamSynchronize(stream));
    std::string first;
    size_t bad = test::checkReduced(strataFloat32, strataSum, back, ptrs, 0, count, &first);
    RANK_EXPECT(bad == 0, "%zu elements wrong; first: %s", bad, first.c_str());
    cudaFree(source);
    cudaFree(send);
    cudaFree(recv);
    cudaFree(later);
    cudaFreeHost(back);
    cudaStreamDestroy(stream);
    return problems;
  });
  EXPECT_TRUE(test::allSucceeded(outcomes)) << test::describe(outcomes);
}

// A group of device operations (all-reduces of three sizes and dtypes, an
// all-gather, a ring of sends and receives) is one step; then a host
// all-reduce on the same communicator runs after it. On one rank the
// collectives are copies on the stream and the send and receive go to itself.
static void groupAndAHostCallAfterIt(int nranks) {
  test::RankSpec spec;
  spec.nranks = nranks;
  auto outcomes = test::runRanks(spec, [](int rank, int n, strataComm_t comm, const strataUniqueId&) {
    int problems = 0;
    RANK_CUDA(cudaSetDevice(0));
    cudaStream_t stream;
    RANK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    const size_t counts[3] = {1, 1009, 262147};
    std::vector<std::vector<double>> inputs[3];
    std::vector<double> results[3];
    double* dev[3];
    for (int k = 0; k < 3; ++k) {
      inputs[k].assign(size_t(n), std::vector<double>(counts[k]));
      for (int r = 0; r < n; ++r)
        test::fillRandom(strataFloat64, strataSum, inputs[k][size_t(r)].data(), counts[k], 10 * size_t(k) + size_t(r));
      RANK_CUDA(cudaMalloc(&dev[k], counts[k] * 8));
      RANK_CUDA(cudaMemcpy(dev[k], inputs[k][size_t(rank)].data(), counts[k] * 8, cudaMemcpyHostToDevice));
    }
    const size_t gatherCount = 4099;
    std::vector<int32_t> mine(gatherCount), gathered(gatherCount * size_t(n)), received(gatherCount);
    for (size_t i = 0; i < gatherCount; ++i) mine[i] = int32_t(rank * 1000003 + int(i) * 7 + 1);
    int32_t *dMine, *dGathered, *dReceived;
    RANK_CUDA(cudaMalloc(&dMine, gatherCount * 4));
    RANK_CUDA(cudaMalloc(&dGathered, gatherCount * 4 * size_t(n)));
    RANK_CUDA(cudaMalloc(&dReceived, gatherCount * 4));
    RANK_CUDA(cudaMemcpy(dMine, mine.data(), gatherCount * 4, cudaMemcpyHostToDevice));
    RANK_CUDA(landed());
    strataGroupStart();
    for (int k = 0; k < 3; ++k) strataAllReduce(dev[k], dev[k], counts[k], strataFloat64, strataSum, comm, stream);
    strataAllGather(dMine, dGathered, gatherCount, strataInt32, comm, stream);
    strataSend(dMine, gatherCount, strataInt32, (rank + 1) % n, comm, stream);
    strataRecv(dReceived, gatherCount, strataInt32, (rank + n - 1) % n, comm, stream);
    strataResult_t rc = strataGroupEnd();
    RANK_EXPECT(rc == strataSuccess, "group: %s", strataGetLastError(comm));
    // A host call right after: it must wait for the group (same order on every rank).
    std::vector<float> hostIn(101, float(rank + 1)), hostOut(101);
    rc = strataAllReduce(hostIn.data(), hostOut.data(), 101, strataFloat32, strataSum, comm, nullptr);
    RANK_EXPECT(rc == strataSuccess, "host call: %s", strataGetLastError(comm));
    RANK_EXPECT(hostOut[100] == float(n * (n + 1) / 2), "host all-reduce gave %g", double(hostOut[100]));
    RANK_CUDA(cudaStreamSynchronize(stream));
    for (int k = 0; k < 3; ++k) {
      results[k].resize(counts[k]);
      RANK_CUDA(cudaMemcpy(results[k].data(), dev[k], counts[k] * 8, cudaMemcpyDeviceToHost));
      std::vector<const void*> ptrs;
      for (auto& v : inputs[k]) ptrs.push_back(v.data());
      std::string first;
      size_t bad = test::checkReduced(strataFloat64, strataSum, results[k].data(), ptrs, 0, counts[k], &first);
      RANK_EXPECT(bad == 0, "all-reduce %d: %zu wrong; first: %s", k, bad, first.c_str());
      cudaFree(dev[k]);
    }
    RANK_CUDA(cudaMemcpy(gathered.data(), dGathered, gatherCount * 4 * size_t(n), cudaMemcpyDeviceToHost));
    RANK_CUDA(cudaMemcpy(received.data(), dReceived, gatherCount * 4, cudaMemcpyDeviceToHost));
    for (int r = 0; r < n; ++r)
      RANK_EXPECT(gathered[size_t(r) * gatherCount + 5] == int32_t(r * 1000003 + 36), "all-gather block %d", r);
    const int from = (rank + n - 1) % n;
    RANK_EXPECT(received[gatherCount - 1] == int32_t(from * 1000003 + int(gatherCount - 1) * 7 + 1),
                "received %d", received[gatherCount - 1]);
    cudaFree(dMine);
    cudaFree(dGathered);
    cudaFree(dReceived);
    cudaStreamDestroy(stream);
    return problems;
  });
  EXPECT_TRUE(test::allSucceeded(outcomes)) << test::describe(outcomes);
}

TEST(DeviceStreams, AGroupAndAHostCallAfterItAreRightAndInOrder) {
  SKIP_WITHOUT_GPU();
  groupAndAHostCallAfterIt(3);
}

TEST(DeviceStreams, AGroupOnOneRankIsRightAndInOrder) {
  SKIP_WITHOUT_GPU();
  groupAndAHostCallAfterIt(1);
}

// A group of 1000 small all-reduces (1 to 300 float32 each, at odd offsets
// inside one allocation): their copies in and out go through the multi-copy
// kernel, 120 rows a launch, with the tables in the launches' parameters.
TEST(DeviceStreams, AGroupOfAThousandSmallTensorsIsPackedByTheCopyKernel) {
  SKIP_WITHOUT_GPU();
  test::RankSpec spec;
  spec.nranks = 2;
  auto outcomes = test::runRanks(spec, [](int rank, int n, strataComm_t comm, const strataUniqueId&) {
    int problems = 0;
    RANK_CUDA(cudaSetDevice(0));
    cudaStream_t stream;
    RANK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    const int tensors = 1000;
    std::vector<size_t> offset(tensors + 1, 0), count(tensors);
    for (int t = 0; t < tensors; ++t) {
      count[size_t(t)] = 1 + (size_t(t) * 7919) % 300;
      offset[size_t(t) + 1] = offset[size_t(t)] + count[size_t(t)] + size_t(t % 3);  // odd gaps: odd alignments
    }
    const size_t total = offset[tensors];
    std::vector<std::vector<float>> inputs{size_t(n), std::vector<float>(total)};
    for (int r = 0; r < n; ++r) test::fillRandom(strataFloat32, strataSum, inputs[size_t(r)].data(), total, 77 + size_t(r));
    float* dev = nullptr;
    RANK_CUDA(cudaMalloc(&dev, total * 4));
    RANK_CUDA(cudaMemcpy(dev, inputs[size_t(rank)].data(), total * 4, cudaMemcpyHostToDevice));
    RANK_CUDA(landed());
    strataGroupStart();
    for (int t = 0; t < tensors; ++t)
      strataAllReduce(dev + offset[size_t(t)], dev + offset[size_t(t)], count[size_t(t)], strataFloat32, strataSum, comm,
                      stream);
    strataResult_t rc = strataGroupEnd();
    RANK_EXPECT(rc == strataSuccess, "group: %s", strataGetLastError(comm));
    std::vector<float> result(total);
    RANK_CUDA(cudaStreamSynchronize(stream));
    RANK_CUDA(cudaMemcpy(result.data(), dev, total * 4, cudaMemcpyDeviceToHost));
    for (int t = 0; t < tensors && problems == 0; ++t) {
      std::vector<const void*> ptrs;
      for (auto& v : inputs) ptrs.push_back(v.data() + offset[size_t(t)]);
      std::string first;
      size_t bad = test::checkReduced(strataFloat32, strataSum, result.data() + offset[size_t(t)], ptrs, 0,
                                      count[size_t(t)], &first);
      RANK_EXPECT(bad == 0, "tensor %d: %zu wrong; first: %s", t, bad, first.c_str());
      // The gaps between tensors belong to no operation: they keep this rank's input.
      for (size_t g = offset[size_t(t)] + count[size_t(t)]; g < offset[size_t(t) + 1]; ++g)
        RANK_EXPECT(result[g] == inputs[size_t(rank)][g], "the gap after tensor %d changed", t);
    }
    cudaFree(dev);
    cudaStreamDestroy(stream);
    return problems;
  });
  EXPECT_TRUE(test::allSucceeded(outcomes)) << test::describe(outcomes);
}

// Clear refusals: host and device buffers mixed in one call, a stream being
// captured into a graph, a receive-any into device memory.
TEST(DeviceStreams, UnsupportedUsesAreRefusedWithASentence) {
  SKIP_WITHOUT_GPU();
  test::RankSpec spec;
  spec.nranks = 2;
  auto outcomes = test::runRanks(spec, [](int rank, int n, strataComm_t comm, const strataUniqueId&) {
    int problems = 0;
    RANK_CUDA(cudaSetDevice(0));
    cudaStream_t stream;
    RANK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    float* dev;
    RANK_CUDA(cudaMalloc(&dev, 64 * 4));
    std::vector<float> host(64, 1.0f);
    strataResult_t rc = strataAllReduce(dev, host.data(), 64, strataFloat32, strataSum, comm, stream);
    RANK_EXPECT(rc == strataInvalidArgument && std::strstr(strataGetLastError(comm), "device"),
                "mixed memory: %s: %s", strataGetErrorString(rc), strataGetLastError(comm));
    RANK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    rc = strataAllReduce(dev, dev, 64, strataFloat32, strataSum, comm, stream);
    cudaGraph_t graph = nullptr;
    cudaStreamEndCapture(stream, &graph);
    if (graph) cudaGraphDestroy(graph);
    RANK_EXPECT(rc == strataUnsupported && std::strstr(strataGetLastError(comm), "graph"),
                "capture: %s: %s", strataGetErrorString(rc), strataGetLastError(comm));
    int peer = -1;
    rc = strataRecvAny(dev, 64, strataFloat32, &peer, comm, stream);
    RANK_EXPECT(rc == strataUnsupported, "receive-any: %s", strataGetErrorString(rc));
    // The communicator still works after the refusals.
    RANK_CUDA(cudaMemcpy(dev, host.data(), 64 * 4, cudaMemcpyHostToDevice));
    RANK_CUDA(landed());
    rc = strataAllReduce(dev, dev, 64, strataFloat32, strataSum, comm, stream);
    RANK_EXPECT(rc == strataSuccess, "%s", strataGetLastError(comm));
    RANK_CUDA(cudaStreamSynchronize(stream));
    RANK_CUDA(cudaMemcpy(host.data(), dev, 64 * 4, cudaMemcpyDeviceToHost));
    RANK_EXPECT(host[63] == float(n), "got %g", double(host[63]));
    cudaFree(dev);
    cudaStreamDestroy(stream);
    return problems;
  });
  EXPECT_TRUE(test::allSucceeded(outcomes)) << test::describe(outcomes);
}

// Rank `rank`'s part of an in-place float32 sum all-reduce of `count` random
// elements (seeded per rank) on the device: the call, no asynchronous error,
// the result against the reference; then how many bytes this rank sent over
// the host links (shared memory), in *hostBytes.
int allReduceOnTheDevice(int rank, int n, strataComm_t comm, size_t count, uint64_t seed, uint64_t* hostBytes) {
  int problems = 0;
  RANK_CUDA(cudaSetDevice(0));
  cudaStream_t stream;
  RANK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::vector<std::vector<float>> inputs(static_cast<size_t>(n), std::vector<float>(count));
  std::vector<const void*> ptrs;
  for (int r = 0; r < n; ++r) {
    test::fillRandom(strataFloat32, strataSum, inputs[size_t(r)].data(), count, seed + size_t(r));
    ptrs.push_back(inputs[size_t(r)].data());
  }
  float* dev;
  RANK_CUDA(cudaMalloc(&dev, count * 4));
  RANK_CUDA(cudaMemcpy(dev, inputs[size_t(rank)].data(), count * 4, cudaMemcpyHostToDevice));
  RANK_CUDA(landed());
  RANK_EXPECT(strataAllReduce(dev, dev, count, strataFloat32, strataSum, comm, stream) == strataSuccess, "%s",
              strataGetLastError(comm));
  RANK_CUDA(cudaStreamSynchronize(stream));
  strataResult_t async = strataSuccess;
  RANK_EXPECT(strataCommGetAsyncError(comm, &async) == strataSuccess && async == strataSuccess, "async error: %s",
              strataGetLastError(comm));
  std::vector<float> result(count);
  RANK_CUDA(cudaMemcpy(result.data(), dev, count * 4, cudaMemcpyDeviceToHost));
  std::string first;
  size_t bad = test::checkReduced(strataFloat32, strataSum, result.data(), ptrs, 0, count, &first);
  RANK_EXPECT(bad == 0, "%zu elements wrong; first: %s", bad, first.c_str());
  strataStats_t stats{};
  RANK_EXPECT(strataCommGetStats(comm, &stats) == strataSuccess, "stats: %s", strataGetLastError(comm));
  *hostBytes = stats.transport[strataTransportShm].bytesSent;
  cudaFree(dev);
  cudaStreamDestroy(stream);
  return problems;
}

// With CUDA IPC a device all-reduce's data stays on the GPU: the host links
// carry only the steps' small barriers; staged through the host (the same call
// with STRATA_CUDA_IPC=0) they carry the data. The result is right both ways.
TEST(DeviceIpc, ACollectivesDataStaysOnTheGpu) {
  SKIP_WITHOUT_GPU();
  for (const char* ipc : {"1", "0"}) {
    SCOPED_TRACE(std::string("STRATA_CUDA_IPC=") + ipc);
    test::RankSpec spec;
    spec.nranks = 2;
    spec.env = {{"STRATA_CUDA_IPC", ipc}};
    const bool overIpc = ipc[0] == '1';
    auto outcomes = test::runRanks(spec, [overIpc](int rank, int n, strataComm_t comm, const strataUniqueId&) {
      const size_t count = 16 * 1048576 + 3;  // 64 MiB of float32, in several slots' pieces
      uint64_t hostBytes = 0;
      int problems = allReduceOnTheDevice(rank, n, comm, count, 500, &hostBytes);
      if (overIpc)
        RANK_EXPECT(hostBytes < (1u << 20), "%llu bytes crossed the host links over IPC",
                    (unsigned long long)hostBytes);
      else
        RANK_EXPECT(hostBytes >= count * 4 / 2, "only %llu bytes crossed the host links staged through the host",
                    (unsigned long long)hostBytes);
      return problems;
    });
    EXPECT_TRUE(test::allSucceeded(outcomes)) << test::describe(outcomes);
  }
}

#ifdef STRATA_CUDA_EMULATED
// One rank cannot map the others' slots (the emulated device refuses it on
// request): every rank learns it from the set-up's exchange and stages
// through the host, and the result is right. Only the emulator can refuse.
TEST(DeviceIpc, WhenOneRankCannotMapEveryRankStagesThroughTheHost) {
  test::RankSpec spec;
  spec.nranks = 3;
  auto outcomes = test::runRanks(spec, [](int rank, int n, strataComm_t comm, const strataUniqueId&) {
    if (rank == 1) setenv("STRATA_EMULATED_IPC_OPEN_FAILS", "1", 1);
    const size_t count = 100003;
    uint64_t hostBytes = 0;
    int problems = allReduceOnTheDevice(rank, n, comm, count, 900, &hostBytes);
    RANK_EXPECT(hostBytes >= count * 4 / 2, "only %llu bytes crossed the host links: not staged through the host",
                (unsigned long long)hostBytes);
    return problems;
  });
  EXPECT_TRUE(test::allSucceeded(outcomes)) << test::describe(outcomes);
}

// A GPU that does not run a cuda_ipc step's reduction within the timeout
// (the emulated device holds rank 1's for 4 s; the timeout is 1 s): rank 1
// gets strataTimeout naming the step, the other rank an asynchronous error
// too, and both streams finish instead of waiting forever.
TEST(DeviceIpc, AStepWhoseKernelDoesNotRunIsATimeoutNotAHang) {
  test::RankSpec spec;
  spec.nranks = 2;
  spec.env = {{"STRATA_TIMEOUT_MS", "1000"}};
  spec.deadlineSec = 60;
  auto outcomes = test::runRanks(spec, [](int rank, int, strataComm_t comm, const strataUniqueId&) {
    int problems = 0;
    if (rank == 1) setenv("STRATA_EMULATED_REDUCE_DELAY_MS", "4000", 1);
    cudaStream_t stream;
    RANK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    const size_t count = 4099;
    float* dev;
    RANK_CUDA(cudaMalloc(&dev, count * 4));
    RANK_CUDA(cudaMemset(dev, 0, count * 4));
    RANK_CUDA(landed());
    RANK_EXPECT(strataAllReduce(dev, dev, count, strataFloat32, strataSum, comm, stream) == strataSuccess,
                "enqueue: %s", strataGetLastError(comm));
    RANK_CUDA(cudaStreamSynchronize(stream));  // returns: the step's wait was released
    strataResult_t async = strataSuccess;
    RANK_EXPECT(strataCommGetAsyncError(comm, &async) == strataSuccess, "strataCommGetAsyncError failed");
    RANK_EXPECT(async != strataSuccess, "no asynchronous error");
    if (rank == 1)
      RANK_EXPECT(async == strataTimeout && std::strstr(strataGetLastError(comm), "did not finish on the GPU"),
                  "%s: %s", strataGetErrorString(async), strataGetLastError(comm));
    strataCommAbort(comm);
    cudaFree(dev);
    cudaStreamDestroy(stream);
    return problems;
  });
  EXPECT_TRUE(test::allSucceeded(outcomes)) << test::describe(outcomes);
}
#endif

// Ranks whose device calls differ (here the count) fail with strataMismatch
// on every rank, reported asynchronously, instead of reading each other's
// slots as if they matched.
TEST(DeviceIpc, MismatchedCallsAreAnErrorNotCorruption) {
  SKIP_WITHOUT_GPU();
  test::RankSpec spec;
  spec.nranks = 3;
  spec.env = {{"STRATA_TIMEOUT_MS", "10000"}};
  auto outcomes = test::runRanks(spec, [](int rank, int, strataComm_t comm, const strataUniqueId&) {
    int problems = 0;
    RANK_CUDA(cudaSetDevice(0));
    cudaStream_t stream;
    RANK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    float* dev;
    RANK_CUDA(cudaMalloc(&dev, 4096 * 4));
    RANK_CUDA(cudaMemset(dev, 0, 4096 * 4));
    RANK_CUDA(landed());
    RANK_EXPECT(strataAllReduce(dev, dev, 64, strataFloat32, strataSum, comm, stream) == strataSuccess, "%s",
                strataGetLastError(comm));  // connects; agreed by all
    const size_t count = rank == 1 ? 1001 : 1000;
    strataResult_t rc = strataAllReduce(dev, dev, count, strataFloat32, strataSum, comm, stream);
    RANK_EXPECT(rc == strataSuccess, "enqueue: %s", strataGetLastError(comm));
    RANK_CUDA(cudaStreamSynchronize(stream));
    strataResult_t async = strataSuccess;
    RANK_EXPECT(strataCommGetAsyncError(comm, &async) == strataSuccess, "strataCommGetAsyncError failed");
    RANK_EXPECT(async == strataMismatch, "async error %s: %s", strataGetErrorString(async), strataGetLastError(comm));
    strataCommAbort(comm);
    cudaFree(dev);
    cudaStreamDestroy(stream);
    return problems;
  });
  EXPECT_TRUE(test::allSucceeded(outcomes)) << test::describe(outcomes);
}

// A rank dies before the collective: the survivors' calls return (they only
// enqueue), strataCommGetAsyncError reports the failure within the timeout,
// and their streams finish instead of waiting forever.
TEST(DeviceStreams, AKilledPeerIsAnAsyncErrorAndNoStreamHangs) {
  SKIP_WITHOUT_GPU();
  test::RankSpec spec;
  spec.nranks = 3;
  spec.env = {{"STRATA_TIMEOUT_MS", "5000"}};
  spec.deadlineSec = 90;
  auto outcomes = test::runRanks(spec, [](int rank, int n, strataComm_t comm, const strataUniqueId&) {
    int problems = 0;
    if (rank == 2) _exit(0);  // leaves without a word
    RANK_CUDA(cudaSetDevice(0));
    cudaStream_t stream;
    RANK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    const size_t count = 1 << 20;
    float* dev;
    RANK_CUDA(cudaMalloc(&dev, count * 4));
    RANK_CUDA(cudaMemset(dev, 0, count * 4));
    RANK_CUDA(landed());
    strataResult_t rc = strataAllReduce(dev, dev, count, strataFloat32, strataSum, comm, stream);
    RANK_EXPECT(rc == strataSuccess || rc == strataRemoteError, "enqueue: %s", strataGetLastError(comm));
    strataResult_t async = strataSuccess;
    auto start = std::chrono::steady_clock::now();
    while (async == strataSuccess && std::chrono::steady_clock::now() - start < std::chrono::seconds(30)) {
      RANK_EXPECT(strataCommGetAsyncError(comm, &async) == strataSuccess, "strataCommGetAsyncError failed");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    RANK_EXPECT(async == strataRemoteError || async == strataTimeout, "async error %s after 30 s",
                strataGetErrorString(async));
    RANK_EXPECT(std::strlen(strataGetLastError(comm)) > 10, "no sentence");
    RANK_CUDA(cudaStreamSynchronize(stream));  // returns: the staging wait was released
    rc = strataAllReduce(dev, dev, count, strataFloat32, strataSum, comm, stream);
    RANK_EXPECT(rc != strataSuccess, "a failed communicator accepted more work");
    strataCommAbort(comm);
    cudaFree(dev);
    cudaStreamDestroy(stream);
    return problems;
  });
  ASSERT_EQ(outcomes.size(), 3u);
  EXPECT_EQ(outcomes[0].exitCode, 0) << test::describe(outcomes);
  EXPECT_EQ(outcomes[1].exitCode, 0) << test::describe(outcomes);
}

// A rank dies after the peers' slots are mapped, while the others' next
// all-reduce waits for it inside a cuda_ipc step: they get an asynchronous
// error within the timeout, naming it, and their streams finish.
TEST(DeviceIpc, APeerKilledBetweenStepsIsAnAsyncErrorAndNoStreamHangs) {
  SKIP_WITHOUT_GPU();
  test::RankSpec spec;
  spec.nranks = 3;
  spec.env = {{"STRATA_TIMEOUT_MS", "5000"}};
  spec.deadlineSec = 90;
  auto outcomes = test::runRanks(spec, [](int rank, int, strataComm_t comm, const strataUniqueId&) {
    int problems = 0;
    RANK_CUDA(cudaSetDevice(0));
    cudaStream_t stream;
    RANK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    const size_t count = 1 << 18;
    float* dev;
    RANK_CUDA(cudaMalloc(&dev, count * 4));
    RANK_CUDA(cudaMemset(dev, 0, count * 4));
    RANK_CUDA(landed());
    RANK_EXPECT(strataAllReduce(dev, dev, count, strataFloat32, strataSum, comm, stream) == strataSuccess, "%s",
                strataGetLastError(comm));
    RANK_CUDA(cudaStreamSynchronize(stream));
    if (rank == 2) _exit(0);  // gone once the slots are mapped and one step has run
    RANK_EXPECT(strataAllReduce(dev, dev, count, strataFloat32, strataSum, comm, stream) == strataSuccess,
                "enqueue: %s", strataGetLastError(comm));
    RANK_CUDA(cudaStreamSynchronize(stream));  // returns: the step's wait was released
    strataResult_t async = strataSuccess;
    RANK_EXPECT(strataCommGetAsyncError(comm, &async) == strataSuccess, "strataCommGetAsyncError failed");
    RANK_EXPECT(async == strataRemoteError || async == strataTimeout, "async error %s",
                strataGetErrorString(async));
    RANK_EXPECT(std::strstr(strataGetLastError(comm), "rank 2"), "the error does not name rank 2: %s",
                strataGetLastError(comm));
    strataCommAbort(comm);
    cudaFree(dev);
    cudaStreamDestroy(stream);
    return problems;
  });
  ASSERT_EQ(outcomes.size(), 3u);
  EXPECT_EQ(outcomes[0].exitCode, 0) << test::describe(outcomes);
  EXPECT_EQ(outcomes[1].exitCode, 0) << test::describe(outcomes);
}

}  // namespace
}  // namespace strata
