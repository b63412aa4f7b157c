// strata-perf: nccl-tests shaped benchmark of strata's collectives.
// Per size it prints time (the slowest rank's mean over -n iterations),
// algbw = bytes / time and busbw = algbw x the collective's bus factor
// (nccl-tests' definitions), for out-of-place and in-place calls, and the
// number of wrong elements found by -c checking.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "local_ranks.h"
#include "perf_check.h"
#include "perf_device.h"
#include "perf_options.h"
#include "strata/strata.h"
#ifdef STRATA_PERF_WITH_MPI
#include "strata/strata_mpi.h"
#endif

namespace {

#define CHECK_OK(call)                                                                  \
  do {                                                                                  \
    strataResult_t rc_ = (call);                                                        \
    if (rc_ != strataSuccess) {                                                         \
      std::fprintf(stderr, "strata-perf: %s failed: %s: %s\n", #call,                   \
                   strataGetErrorString(rc_), strataGetLastError(comm));                \
      std::exit(2);                                                                     \
    }                                                                                   \
  } while (0)

struct Row {
  size_t bytes, count;
  double timeUs[2], algbw[2], busbw[2];
  long long wrong[2];
};

double busFactor(const std::string& c, int n) {
  if (c == "all_reduce") return 2.0 * (n - 1) / n;
  if (c == "reduce_scatter" || c == "all_gather" || c == "alltoall") return double(n - 1) / n;
  return 1.0;
}

// Elements per rank block for a total size in bytes (nccl-tests: the size is the whole array).
size_t countFor(const std::string& c, size_t bytes, size_t elem, int n) {
  size_t count = bytes / elem;
  if (c == "reduce_scatter" || c == "all_gather" || c == "alltoall") count /= size_t(n);
  return count;
}

// A host buffer: a vector, or (-M 1) strataMemAlloc memory, kept while it is big enough.
class PerfBuffer {
 public:
  explicit PerfBuffer(bool mapped) : mapped_(mapped) {}
  PerfBuffer(const PerfBuffer&) = delete;
  PerfBuffer& operator=(const PerfBuffer&) = delete;
  ~PerfBuffer() {
    if (mem_) strataMemFree(mem_);
  }
  void assign(size_t n, char value) {
    if (!mapped_) {
      vec_.assign(n, value);
      return;
    }
    if (n > capacity_) {
      if (mem_) strataMemFree(mem_);
      mem_ = nullptr;
      if (strataMemAlloc(&mem_, n) != strataSuccess) {
        std::fprintf(stderr, "strata-perf: strataMemAlloc(%zu) failed: %s\n", n, strataGetLastError(nullptr));
        std::exit(2);
      }
      capacity_ = n;
    }
    size_ = n;
    std::memset(mem_, value, n);
  }
  char* data() { return mapped_ ? static_cast<char*>(mem_) : vec_.data(); }
  size_t size() const { return mapped_ ? size_ : vec_.size(); }

 private:
  bool mapped_;
  std::vector<char> vec_;
  void* mem_ = nullptr;
  size_t size_ = 0, capacity_ = 0;
};

class Bench {
 public:
  Bench(const PerfOptions& o, strataComm_t comm, int rank, int n)
      : o_(o), comm(comm), rank_(rank), n_(n), elem_(elemBytes(o.dtype)), sendBuf_(o.mapped != 0),
        recvBuf_(o.mapped != 0) {}

  void runOnce(size_t count, bool inPlace) {
    size_t blockBytes = count * elem_;
    char* send = o_.gpu ? dSend_ : sendBuf_.data();
    char* recv = o_.gpu ? dRecv_ : recvBuf_.data();
    void* st = o_.gpu ? perfdev::stream() : nullptr;
    switch (o_.coll) {
      case PerfColl::kAllReduce:
        CHECK_OK(strataAllReduce(inPlace ? recv : send, recv, count, o_.dtype, o_.op, comm, st));
        break;
      case PerfColl::kReduceScatter:
        CHECK_OK(strataReduceScatter(inPlace ? recv : send, inPlace ? recv + rank_ * blockBytes : recv,
                                     count, o_.dtype, o_.op, comm, st));
        break;
      case PerfColl::kAllGather:
        CHECK_OK(strataAllGather(inPlace ? recv + rank_ * blockBytes : send, recv, count, o_.dtype, comm,
                                 st));
        break;
      case PerfColl::kBroadcast:
        CHECK_OK(strataBroadcast(inPlace ? recv : send, recv, count, o_.dtype, o_.root, comm, st));
        break;
      case PerfColl::kReduce:
        CHECK_OK(strataReduce(inPlace ? recv : send, recv, count, o_.dtype, o_.op, o_.root, comm, st));
        break;
      case PerfColl::kAllToAll:
        CHECK_OK(strataAllToAll(inPlace ? recv : send, recv, count, o_.dtype, comm, st));
        break;
      case PerfColl::kSendRecv:
        CHECK_OK(strataGroupStart());
        CHECK_OK(strataSend(inPlace ? recv : send, count, o_.dtype, (rank_ + 1) % n_, comm, st));
        CHECK_OK(strataRecv(recv, count, o_.dtype, (rank_ - 1 + n_) % n_, comm, st));
        CHECK_OK(strataGroupEnd());
        break;
    }
  }

  // Copies the input where the in-place variant expects it.
  void prepare(size_t count, bool inPlace) {
    const std::string& c = o_.collective;
    size_t blockBytes = count * elem_;
    if (!inPlace) return;
    if (c == "all_gather") {
      std::memcpy(recvBuf_.data() + rank_ * blockBytes, sendBuf_.data(), blockBytes);
    } else if (c == "sendrecv") {
      // in-place send/recv is not meaningful; send from a copy of the input
      std::memcpy(recvBuf_.data(), sendBuf_.data(), blockBytes);
    } else {
      std::memcpy(recvBuf_.data(), sendBuf_.data(), sendElems(count) * elem_);
    }
  }

  // -G: device copies of the host buffers (as prepared), made or grown here.
  void mirror() {
    if (!o_.gpu) return;
    if (dSendBytes_ < sendBuf_.size()) {
      perfdev::release(dSend_);
      dSend_ = static_cast<char*>(perfdev::allocate(sendBuf_.size()));
      dSendBytes_ = sendBuf_.size();
    }
    if (dRecvBytes_ < recvBuf_.size()) {
      perfdev::release(dRecv_);
      dRecv_ = static_cast<char*>(perfdev::allocate(recvBuf_.size()));
      dRecvBytes_ = recvBuf_.size();
    }
    perfdev::upload(dSend_, sendBuf_.data(), sendBuf_.size());
    perfdev::upload(dRecv_, recvBuf_.data(), recvBuf_.size());
  }
  // -G: waits for the calls enqueued so far (part of the timed interval, as nccl-tests).
  void finish() {
    if (o_.gpu) perfdev::synchronize();
  }

  size_t sendElems(size_t count) const {
    const std::string& c = o_.collective;
    return (c == "reduce_scatter" || c == "alltoall") ? count * size_t(n_) : count;
  }
  size_t recvElems(size_t count) const {
    const std::string& c = o_.collective;
    return (c == "all_gather" || c == "alltoall") ? count * size_t(n_) : count;
  }

  double slowest(double v) {
    double out = 0;
    CHECK_OK(strataAllReduce(&v, &out, 1, strataFloat64, strataMax, comm, nullptr));
    return out;
  }
  long long total(long long v) {
    long long out = 0;
    CHECK_OK(strataAllReduce(&v, &out, 1, strataInt64, strataSum, comm, nullptr));
    return out;
  }

  // For -A: buffers for `bytes` (out-of-place), returning the element count;
  // then the slowest rank's time per call of `iters` calls.
  size_t setUp(size_t bytes) {
    size_t count = countFor(o_.collective, bytes, elem_, n_);
    sendBuf_.assign(sendElems(count) * elem_ + 64, 0);
    recvBuf_.assign(std::max(sendElems(count), recvElems(count)) * elem_ + 64, 0);
    CheckSpec spec{o_.collective, o_.dtype, o_.op, rank_, n_, o_.root, count};
    fillInput(spec, sendBuf_.data(), sendElems(count));
    mirror();
    return count;
  }
  double timeCalls(size_t count, int iters) {
    CHECK_OK(strataBarrier(comm, nullptr));
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) runOnce(count, false);
    finish();
    auto t1 = std::chrono::steady_clock::now();
    return slowest(std::chrono::duration<double, std::micro>(t1 - t0).count() / iters);
  }

  Row measure(size_t bytes) {
    Row row{};
    size_t count = countFor(o_.collective, bytes, elem_, n_);
    row.count = count;
    row.bytes = (o_.collective == "reduce_scatter" || o_.collective == "all_gather" ||
                 o_.collective == "alltoall")
                    ? count * elem_ * size_t(n_)
                    : count * elem_;
    sendBuf_.assign(sendElems(count) * elem_ + 64, 0);
    // In place, reduce-scatter works inside the whole send-sized array.
    recvBuf_.assign(std::max(sendElems(count), recvElems(count)) * elem_ + 64, 0);
    CheckSpec spec{o_.collective, o_.dtype, o_.op, rank_, n_, o_.root, count};
    fillInput(spec, sendBuf_.data(), sendElems(count));
    for (int inPlace = 0; inPlace < 2; ++inPlace) {
      prepare(count, inPlace);
      mirror();
      for (int i = 0; i < o_.warmup; ++i) runOnce(count, inPlace);
      finish();
      CHECK_OK(strataBarrier(comm, nullptr));
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < o_.iters; ++i) runOnce(count, inPlace);
      finish();
      auto t1 = std::chrono::steady_clock::now();
      double us = std::chrono::duration<double, std::micro>(t1 - t0).count() / o_.iters;
      row.timeUs[inPlace] = slowest(us);
      row.algbw[inPlace] = row.bytes / (row.timeUs[inPlace] * 1e3);
      row.busbw[inPlace] = row.algbw[inPlace] * busFactor(o_.collective, n_);
      long long wrong = 0;
      for (int k = 0; k < o_.check; ++k) {
        std::memset(recvBuf_.data(), 0, recvBuf_.size());
        prepare(count, inPlace);
        mirror();
        runOnce(count, inPlace);
        if (o_.gpu) {
          finish();
          perfdev::download(recvBuf_.data(), dRecv_, recvBuf_.size());
        }
        // In place, reduce-scatter leaves the result in this rank's block.
        size_t at = (inPlace && o_.collective == "reduce_scatter") ? size_t(rank_) * count * elem_ : 0;
        wrong += (long long)countWrong(spec, recvBuf_.data() + at);
      }
      row.wrong[inPlace] = o_.check ? total(wrong) : -1;
    }
    return row;
  }

 private:
  const PerfOptions& o_;

 public:
  strataComm_t comm;

 private:
  int rank_, n_;
  size_t elem_;
  PerfBuffer sendBuf_, recvBuf_;
  char* dSend_ = nullptr;  // -G: device copies
  char* dRecv_ = nullptr;
  size_t dSendBytes_ = 0, dRecvBytes_ = 0;
};

void printHeader(const PerfOptions& o, int n) {
  std::printf("# strata-perf %s: %d ranks, dtype %s, op %s, root %d, iters %d, warmup %d, check %d, %s buffers\n",
              o.collective.c_str(), n, dtypeLabel(o.dtype), opLabel(o.op), o.root, o.iters, o.warmup,
              o.check, o.gpu ? "device (CUDA)" : o.mapped ? "host (strataMemAlloc)" : "host");
  std::printf("#%66s%36s\n", "out-of-place", "in-place");
  std::printf("# %12s %12s %8s %6s %5s %10s %8s %8s %7s %10s %8s %8s %7s\n", "size", "count", "type",
              "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  std::printf("# %12s %12s %8s %6s %5s %10s %8s %8s %7s %10s %8s %8s %7s\n", "(B)", "(elements)", "",
              "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
}

void printRow(const PerfOptions& o, const Row& r) {
  std::printf("  %12zu %12zu %8s %6s %5d", r.bytes, r.count, dtypeLabel(o.dtype), opLabel(o.op), o.root);
  for (int k = 0; k < 2; ++k) {
    char wrong[24];  // a 64-bit count fits
    if (r.wrong[k] < 0) std::snprintf(wrong, sizeof(wrong), "N/A");
    else std::snprintf(wrong, sizeof(wrong), "%lld", r.wrong[k]);
    std::printf(" %10.3f %8.3f %8.3f %7s", r.timeUs[k], r.algbw[k], r.busbw[k], wrong);
  }
  std::printf("\n");
  std::fflush(stdout);
}

void writeJson(const PerfOptions& o, int n, const std::vector<Row>& rows) {
  FILE* f = std::fopen(o.jsonPath.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "strata-perf: cannot write %s\n", o.jsonPath.c_str());
    return;
  }
  std::fprintf(f, "{\"library\": \"strata\", \"collective\": \"%s\", \"nranks\": %d, \"dtype\": \"%s\", "
                  "\"op\": \"%s\", \"rows\": [\n", o.collective.c_str(), n, dtypeLabel(o.dtype), opLabel(o.op));
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    std::fprintf(f, "  {\"bytes\": %zu, \"count\": %zu, \"time_us\": %.3f, \"algbw\": %.4f, \"busbw\": %.4f, "
                    "\"wrong\": %lld, \"inplace_time_us\": %.3f, \"inplace_algbw\": %.4f, "
                    "\"inplace_busbw\": %.4f, \"inplace_wrong\": %lld}%s\n",
                 r.bytes, r.count, r.timeUs[0], r.algbw[0], r.busbw[0], r.wrong[0], r.timeUs[1], r.algbw[1],
                 r.busbw[1], r.wrong[1], i + 1 < rows.size() ? "," : "");
  }
  std::fprintf(f, "]}\n");
  std::fclose(f);
}

int compareAlgorithms(const PerfOptions& o, strataComm_t comm);

// -G 1: picks this rank's device (its local rank modulo the GPUs) and stream.
bool deviceReady(const PerfOptions& o, int rank) {
  if (!o.gpu) return true;
  const char* local = std::getenv("LOCAL_RANK");
  if (!local) local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  if (!local) local = std::getenv("SLURM_LOCALID");
  std::string why;
  if (perfdev::ready(local ? std::atoi(local) : rank, &why)) return true;
  if (rank == 0) std::fprintf(stderr, "strata-perf: -G 1: %s\n", why.c_str());
  return false;
}

int runRank(const PerfOptions& o, strataComm_t comm) {
  int rank = 0, n = 1;
  CHECK_OK(strataCommUserRank(comm, &rank));
  if (!deviceReady(o, rank)) return 77;
  if (!o.algorithms.empty()) return compareAlgorithms(o, comm);
  CHECK_OK(strataCommCount(comm, &n));
  if (o.root < 0 || o.root >= n) {
    if (rank == 0) std::fprintf(stderr, "strata-perf: root %d out of range\n", o.root);
    return 2;
  }
  Bench bench(o, comm, rank, n);
  if (rank == 0) printHeader(o, n);
  std::vector<Row> rows;
  double busSum = 0;
  long long wrongSum = 0;
  for (size_t bytes = o.minBytes; bytes <= o.maxBytes;) {
    Row r = bench.measure(bytes);
    rows.push_back(r);
    busSum += r.busbw[0];
    wrongSum += (r.wrong[0] > 0 ? r.wrong[0] : 0) + (r.wrong[1] > 0 ? r.wrong[1] : 0);
    if (rank == 0) printRow(o, r);
    size_t next = o.stepBytes ? bytes + o.stepBytes : size_t(double(bytes) * o.factor);
    bytes = next > bytes ? next : bytes + 1;
  }
  if (rank == 0) {
    std::printf("# Out of bounds values : %lld %s\n", wrongSum, wrongSum ? "FAILED" : "OK");
    std::printf("# Avg bus bandwidth    : %.4f\n", rows.empty() ? 0.0 : busSum / double(rows.size()));
    if (!o.jsonPath.empty()) writeJson(o, n, rows);
    std::fflush(stdout);  // forked ranks leave through _Exit, which does not flush
  }
  CHECK_OK(strataCommDestroy(comm));
  return wrongSum ? 1 : 0;
}

// A communicator of the same ranks whose STRATA_ALGO is `algo` ("auto": the
// cost model), made through a unique id that rank 0 broadcasts over `comm`.
strataComm_t commWithAlgorithm(strataComm_t comm, int rank, int n, const std::string& algo) {
  strataUniqueId id;
  std::memset(&id, 0, sizeof(id));
  if (rank == 0) {
    // Not on STRATA_COMM_ID: that address served the first communicator.
    const char* fixed = std::getenv("STRATA_COMM_ID");
    std::string saved = fixed ? fixed : "";
    unsetenv("STRATA_COMM_ID");
    CHECK_OK(strataGetUniqueId(&id));
    if (fixed) setenv("STRATA_COMM_ID", saved.c_str(), 1);
  }
  CHECK_OK(strataBroadcast(&id, &id, sizeof(id), strataUint8, 0, comm, nullptr));
  if (algo == "auto") unsetenv("STRATA_ALGO");
  else setenv("STRATA_ALGO", algo.c_str(), 1);
  strataComm_t made = nullptr;
  CHECK_OK(strataCommInitRank(&made, n, id, rank));
  return made;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// -A: every algorithm in this one launch, in alternating rounds, so that all
// see the same placement and machine state (on a shared VM one launch can run
// twice as slow as the next whatever the algorithm).
int compareAlgorithms(const PerfOptions& o, strataComm_t comm) {
  int rank = 0, n = 1;
  CHECK_OK(strataCommUserRank(comm, &rank));
  CHECK_OK(strataCommCount(comm, &n));
  const char* env = std::getenv("STRATA_ALGO");
  std::string savedAlgo = env ? env : "";
  std::vector<std::unique_ptr<Bench>> benches;
  for (const std::string& algo : o.algorithms)
    benches.push_back(std::make_unique<Bench>(o, commWithAlgorithm(comm, rank, n, algo), rank, n));
  if (env) setenv("STRATA_ALGO", savedAlgo.c_str(), 1);
  else unsetenv("STRATA_ALGO");
  const size_t k = benches.size();
  if (rank == 0) {
    std::printf("# strata-perf %s: %d ranks, dtype %s, op %s, iters %d, warmup %d, %d rounds; algorithms in one "
                "launch, median time per call (us), out-of-place\n",
                o.collective.c_str(), n, dtypeLabel(o.dtype), opLabel(o.op), o.iters, o.warmup, o.rounds);
    std::printf("# %12s %12s", "size", "count");
    for (const std::string& a : o.algorithms) std::printf(" %18s", a.c_str());
    std::printf("\n");
  }
  FILE* json = (rank == 0 && !o.jsonPath.empty()) ? std::fopen(o.jsonPath.c_str(), "w") : nullptr;
  if (json) std::fprintf(json, "{\"collective\": \"%s\", \"nranks\": %d, \"rows\": [", o.collective.c_str(), n);
  bool first = true;
  for (size_t bytes = o.minBytes; bytes <= o.maxBytes;) {
    size_t count = 0;
    for (auto& b : benches) {
      count = b->setUp(bytes);
      if (o.warmup) b->timeCalls(count, o.warmup);
    }
    std::vector<std::vector<double>> times(k);
    for (int r = 0; r < o.rounds; ++r)
      for (size_t i = 0; i < k; ++i) {
        size_t a = (i + size_t(r)) % k;  // rotate who goes first
        if (o.roundWarmup) benches[a]->timeCalls(count, o.roundWarmup);
        times[a].push_back(benches[a]->timeCalls(count, o.iters));
      }
    if (rank == 0) {
      std::printf("  %12zu %12zu", bytes, count);
      for (size_t a = 0; a < k; ++a) std::printf(" %18.2f", median(times[a]));
      std::printf("\n");
      std::fflush(stdout);
    }
    if (json) {
      std::fprintf(json, "%s\n  {\"bytes\": %zu, \"times_us\": {", first ? "" : ",", bytes);
      for (size_t a = 0; a < k; ++a) {
        std::fprintf(json, "%s\"%s\": [", a ? ", " : "", o.algorithms[a].c_str());
        for (size_t r = 0; r < times[a].size(); ++r) std::fprintf(json, "%s%.3f", r ? ", " : "", times[a][r]);
        std::fprintf(json, "]");
      }
      std::fprintf(json, "}}");
    }
    first = false;
    size_t next = o.stepBytes ? bytes + o.stepBytes : size_t(double(bytes) * o.factor);
    bytes = next > bytes ? next : bytes + 1;
  }
  if (json) {
    std::fprintf(json, "\n]}\n");
    std::fclose(json);
  }
  for (auto& b : benches) CHECK_OK(strataCommDestroy(b->comm));
  CHECK_OK(strataCommDestroy(comm));
  return 0;
}

}  // namespace

#ifdef STRATA_PERF_WITH_MPI
// Whether an MPI launcher started this process (Open MPI, or any PMI/PMIx one).
bool launchedByMpi() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK") || std::getenv("PMI_RANK");
}
#endif

int main(int argc, char** argv) {
  PerfOptions o;
  if (!parsePerfOptions(argc, argv, &o)) return 2;
  strataComm_t comm = nullptr;
#ifdef STRATA_PERF_WITH_MPI
  if (o.nprocs <= 0 && launchedByMpi()) {
    MPI_Init(&argc, &argv);
    CHECK_OK(strataCommInitMPI(&comm, MPI_COMM_WORLD));
    int rc = runRank(o, comm);
    MPI_Finalize();
    return rc;
  }
#endif
  if (o.nprocs <= 0) {
    CHECK_OK(strataCommInitFromEnv(&comm));
    return runRank(o, comm);
  }
  return runLocalRanks(o.nprocs, true, [&](int, strataComm_t c) { return runRank(o, c); });
}
