// The soak test: thousands of random collectives (collective, dtype, op,
// count, placement, root) on N ranks in one communicator, every result checked
// against the float64 reference, and each rank's resident memory sampled so
// that growth (a leak per operation) fails the run. Outside the default suite:
//   build/tests/soak --ranks 4 --ops 10000          (or: ctest --test-dir build -L soak)
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "support/collective_cases.h"
#include "support/ranks.h"

using namespace strata;

namespace {

long residentKiB() {
  long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  std::fclose(f);
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

// The i-th random operation: the same on every rank (same seed).
test::Case randomCase(std::mt19937_64& rng, size_t maxCount) {
  static const Coll colls[] = {Coll::kAllReduce, Coll::kReduceScatter, Coll::kAllGather,
                               Coll::kBroadcast, Coll::kReduce,        Coll::kAllToAll};
  test::Case c;
  c.coll = colls[rng() % 6];
  c.dtype = strataDataType_t(rng() % strataNumTypes);
  bool reduces = c.coll == Coll::kAllReduce || c.coll == Coll::kReduceScatter || c.coll == Coll::kReduce;
  c.op = reduces ? strataRedOp_t(rng() % strataNumOps) : strataSum;
  // Log-uniform counts from 0 up, so small and large messages both come often.
  double bits = std::uniform_real_distribution<double>(0, std::log2(double(maxCount) + 1))(rng);
  c.count = size_t(std::exp2(bits)) - 1;
  c.inPlace = rng() % 2;
  c.misalign = rng() % 4;
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  int ranks = 4;
  size_t ops = 10000, maxCount = 65536;
  uint64_t seed = 20261121;
  long maxGrowthKiB = 16 * 1024;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--ranks") ranks = std::atoi(argv[i + 1]);
    else if (a == "--ops") ops = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--max-count") maxCount = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--seed") seed = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--max-growth-kib") maxGrowthKiB = std::atol(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: soak [--ranks N] [--ops N] [--max-count N] [--seed N] [--max-growth-kib N]\n");
      return 2;
    }
  }
  std::printf("soak: %zu random collectives on %d ranks, counts up to %zu, seed %llu\n", ops, ranks, maxCount,
              (unsigned long long)seed);
  std::fflush(stdout);
  test::RankSpec spec;
  spec.nranks = ranks;
  spec.deadlineSec = 3600;
  auto outcomes = test::runRanks(spec, [&](int rank, int n, strataComm_t comm, const strataUniqueId&) {
    int problems = 0;
    std::mt19937_64 rng(seed);
    long baseline = 0, peak = 0;
    const size_t warmup = std::min<size_t>(ops / 10, 1000);
    for (size_t i = 0; i < ops; ++i) {
      test::Case c = randomCase(rng, maxCount);
      size_t index = size_t(rng());  // root = index % n; also seeds the inputs
      std::string why = test::runCase(c, index, rank, n, comm);
      if (!why.empty()) {
        std::fprintf(stderr, "rank %d: operation %zu (%s): %s\n", rank, i, test::describeCase(c).c_str(),
                     why.c_str());
        return 1;
      }
      if (i + 1 == warmup) baseline = residentKiB();
      if (i >= warmup && i % 250 == 0) peak = std::max(peak, residentKiB());
      if (rank == 0 && (i + 1) % 1000 == 0)
        std::printf("soak: %zu operations verified; rank 0 resident %ld KiB\n", i + 1, residentKiB()), std::fflush(stdout);
    }
    peak = std::max(peak, residentKiB());
    long growth = peak - baseline;
    std::printf("soak: rank %d resident %ld KiB after warm-up, %ld KiB peak after (growth %ld KiB)\n", rank,
                baseline, peak, growth);
    std::fflush(stdout);
    RANK_EXPECT(growth <= maxGrowthKiB, "resident memory grew by %ld KiB (limit %ld)", growth, maxGrowthKiB);
    return problems;
  });
  std::printf("soak: %s\n", test::describe(outcomes).c_str());
  return test::allSucceeded(outcomes) ? 0 : 1;
}
