// strata-fusion-bench: what fusion buys, measured side by side in one run.
//   small: 1000 all-reduces of 4 KiB: one strataAllReduce each, vs one group
//          (fused), vs the fusion context (strataFusionAllReduce + synchronize),
//          vs ONE all-reduce of the same 4000 KiB (the bound)
//   mixed: 200 tensors of log-uniform sizes totalling 100 MiB, the same three
//          ways, vs ONE all-reduce of 100 MiB (the bound fusion aims for)
// Each repetition runs every variant once (in rotating order), each timed from
// a barrier to the slowest rank's finish; the table shows medians. One fusion
// context serves the whole run, as a trainer keeps one for its steps.
//   strata-fusion-bench -np 2 [-reps 15] [-nobind] [-scenario small|mixed] [-J results.json]
//   -scenario: that scenario's four variants only (a profile of one, a quick A/B)
//   -np 0: one rank per process from the launcher's variables
//   (strataCommInitFromEnv: torchrun, mpirun, srun, or RANK / WORLD_SIZE /
//   STRATA_COMM_ID by hand, e.g. in network namespaces).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "local_ranks.h"
#include "strata/strata.h"

namespace {

#define CHECK_OK(call)                                                                   \
  do {                                                                                   \
    strataResult_t rc_ = (call);                                                         \
    if (rc_ != strataSuccess) {                                                          \
      std::fprintf(stderr, "%s failed: %s\n", #call, strataGetLastError(nullptr));       \
      std::_Exit(3);                                                                     \
    }                                                                                    \
  } while (0)

struct Options {
  int nprocs = 2;
  int reps = 15;
  bool bind = true;  // one core per rank, as mpirun binds (-nobind: as torchrun leaves them)
  std::string json;
  std::string scenario;  // empty: both
};

struct Tensors {
  std::vector<std::vector<float>> data;
  size_t totalBytes() const {
    size_t b = 0;
    for (auto& d : data) b += d.size() * sizeof(float);
    return b;
  }
};

Tensors smallTensors() {
  Tensors t;
  std::mt19937 rng(1);
  for (int i = 0; i < 1000; ++i) {
    t.data.emplace_back(1024);
    for (float& x : t.data.back()) x = float(rng() % 1000) / 1000.0f;
  }
  return t;
}

// 200 sizes, log-uniform between 1 KiB and 4 MiB, scaled to total 100 MiB.
Tensors mixedTensors() {
  std::mt19937_64 rng(2);
  std::vector<double> w;
  double sum = 0;
  for (int i = 0; i < 200; ++i) {
    w.push_back(std::exp(std::uniform_real_distribution<double>(std::log(1024.0), std::log(4194304.0))(rng)));
    sum += w.back();
  }
  const size_t total = size_t(100) << 20;
  Tensors t;
  size_t used = 0;
  for (int i = 0; i < 200; ++i) {
    size_t elems = i == 199 ? (total - used) / 4 : std::max<size_t>(1, size_t(w[size_t(i)] / sum * double(total)) / 4);
    used += elems * 4;
    t.data.emplace_back(elems, 0.5f);
  }
  return t;
}

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Seconds from a barrier to the slowest rank's end of `body`.
template <class F>
double timed(strataComm_t comm, F&& body) {
  CHECK_OK(strataBarrier(comm, nullptr));
  double t0 = now();
  body();
  double dt = now() - t0;
  double worst = 0;
  CHECK_OK(strataAllReduce(&dt, &worst, 1, strataFloat64, strataMax, comm, nullptr));
  return worst;
}

void unfused(Tensors& t, strataComm_t comm) {
  for (auto& d : t.data) CHECK_OK(strataAllReduce(d.data(), d.data(), d.size(), strataFloat32, strataSum, comm, nullptr));
}
void grouped(Tensors& t, strataComm_t comm) {
  CHECK_OK(strataGroupStart());
  for (auto& d : t.data) CHECK_OK(strataAllReduce(d.data(), d.data(), d.size(), strataFloat32, strataSum, comm, nullptr));
  CHECK_OK(strataGroupEnd());
}
void context(Tensors& t, strataFusion_t f) {
  uint64_t key = 0;
  for (auto& d : t.data)
    CHECK_OK(strataFusionAllReduce(f, key++, d.data(), d.data(), d.size(), strataFloat32, strataSum, nullptr, nullptr, nullptr));
  CHECK_OK(strataFusionSynchronize(f));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

struct Variant {
  const char* scenario;
  const char* name;
  std::vector<double> seconds;
};

int runRank(const Options& o, int rank, strataComm_t comm) {
  Tensors small = smallTensors(), mixed = mixedTensors();
  std::vector<float> one(size_t(100) << 18, 0.5f);  // 100 MiB
  const size_t smallCount = small.totalBytes() / sizeof(float);
  strataFusion_t fusion;
  CHECK_OK(strataFusionCreate(&fusion, comm));
  // Variants 0-3 are "small", 4-7 "mixed"; the last of each is its bound.
  std::vector<Variant> v = {{"small", "one strataAllReduce per tensor", {}}, {"small", "group (fused)", {}},
                            {"small", "fusion context", {}},                {"small", "one 4000 KiB all-reduce", {}},
                            {"mixed", "one strataAllReduce per tensor", {}}, {"mixed", "group (fused)", {}},
                            {"mixed", "fusion context", {}},                {"mixed", "one 100 MiB all-reduce", {}}};
  auto run = [&](size_t i) {
    switch (i) {
      case 0: return timed(comm, [&] { unfused(small, comm); });
      case 1: return timed(comm, [&] { grouped(small, comm); });
      case 2: return timed(comm, [&] { context(small, fusion); });
      case 3:
        return timed(comm, [&] {
          CHECK_OK(strataAllReduce(one.data(), one.data(), smallCount, strataFloat32, strataSum, comm, nullptr));
        });
      case 4: return timed(comm, [&] { unfused(mixed, comm); });
      case 5: return timed(comm, [&] { grouped(mixed, comm); });
      case 6: return timed(comm, [&] { context(mixed, fusion); });
      default:
        return timed(comm, [&] {
          CHECK_OK(strataAllReduce(one.data(), one.data(), one.size(), strataFloat32, strataSum, comm, nullptr));
        });
    }
  };
  auto wanted = [&](size_t i) { return o.scenario.empty() || o.scenario == v[i].scenario; };
  for (size_t i = 0; i < v.size(); ++i)
    if (wanted(i)) run(i);  // warm-up: links, plans, pools
  for (int r = 0; r < o.reps; ++r)
    for (size_t k = 0; k < v.size(); ++k) {
      size_t i = (k + size_t(r)) % v.size();
      if (wanted(i)) v[i].seconds.push_back(run(i));
    }
  if (rank == 0) {
    const char* threshold = std::getenv("STRATA_FUSION_THRESHOLD");
    const char* transport = std::getenv("STRATA_TRANSPORT");
    std::printf("# strata-fusion-bench: %d ranks (%s), transport %s, %d repetitions, STRATA_FUSION_THRESHOLD=%s\n",
                o.nprocs, o.bind ? "one core each" : "not bound", transport ? transport : "auto (shm within a host, the network transport between hosts)", o.reps,
                threshold ? threshold : "(default)");
    std::printf("| scenario | variant | median ms | vs unfused | vs one all-reduce of all the bytes |\n"
                "|---|---|---|---|---|\n");
    for (size_t i = 0; i < v.size(); ++i) {
      if (!wanted(i)) continue;
      const size_t first = i < 4 ? 0 : 4;  // the scenario's unfused variant; first + 3 is its bound
      double ms = median(v[i].seconds) * 1e3;
      double unf = median(v[first].seconds) * 1e3;
      double bound = median(v[first + 3].seconds) * 1e3;
      std::printf("| %s | %s | %.3f | %.2fx faster | %.3fx |\n", v[i].scenario, v[i].name, ms, unf / ms, ms / bound);
    }
    if (!o.json.empty()) {
      FILE* f = std::fopen(o.json.c_str(), "w");
      if (f) {
        std::fprintf(f, "{\"ranks\": %d, \"reps\": %d, \"bound\": %s, \"transport\": \"%s\", \"threshold\": \"%s\", \"variants\": [",
                     o.nprocs, o.reps, o.bind ? "true" : "false", transport ? transport : "auto",
                     threshold ? threshold : "default");
        for (size_t i = 0, written = 0; i < v.size(); ++i) {
          if (!wanted(i)) continue;
          std::fprintf(f, "%s{\"scenario\": \"%s\", \"variant\": \"%s\", \"seconds\": [", written++ ? ", " : "", v[i].scenario,
                       v[i].name);
          for (size_t k = 0; k < v[i].seconds.size(); ++k) std::fprintf(f, "%s%.6f", k ? ", " : "", v[i].seconds[k]);
          std::fprintf(f, "]}");
        }
        std::fprintf(f, "]}\n");
        std::fclose(f);
      }
    }
    std::fflush(stdout);
  }
  CHECK_OK(strataFusionDestroy(fusion));
  CHECK_OK(strataCommDestroy(comm));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-np" && i + 1 < argc) o.nprocs = std::atoi(argv[++i]);
    else if (a == "-reps" && i + 1 < argc) o.reps = std::atoi(argv[++i]);
    else if (a == "-J" && i + 1 < argc) o.json = argv[++i];
    else if (a == "-nobind") o.bind = false;
    else if (a == "-scenario" && i + 1 < argc && (std::string(argv[i + 1]) == "small" || std::string(argv[i + 1]) == "mixed"))
      o.scenario = argv[++i];
    else {
      std::fprintf(stderr, "usage: %s [-np N] [-reps R] [-nobind] [-scenario small|mixed] [-J results.json]\n"
                           "  -np 0: ranks from the launcher (strataCommInitFromEnv)\n", argv[0]);
      return 2;
    }
  }
  if (o.nprocs <= 0) {
    strataComm_t comm = nullptr;
    int rank = 0;
    CHECK_OK(strataCommInitFromEnv(&comm));
    CHECK_OK(strataCommUserRank(comm, &rank));
    CHECK_OK(strataCommCount(comm, &o.nprocs));
    o.bind = false;  // placed by whoever launched it
    return runRank(o, rank, comm);
  }
  return runLocalRanks(o.nprocs, o.bind, [&](int rank, strataComm_t comm) { return runRank(o, rank, comm); });
}
