// Micro-benchmarks of the CPU kernels: every reduction kernel per dtype x op,
// against memcpy on the same buffers. Bytes counted as memory traffic: a
// reduction reads two inputs and writes one output (3 x size), memcpy reads
// one and writes one (2 x size), so GB/s compare how close a kernel comes to
// the memory system's limit; memcpy and float32 sum also with streaming
// stores. Also: the
// cost of building plans.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "algo/select.h"
#include "core/dtype.h"
#include "kernels/cpu/reduce.h"
#include "kernels/cpu/streaming_copy.h"

namespace {

using strata::kernels::reduce;

constexpr size_t kBytes = 32 << 20;  // larger than the caches: memory-bound, like real gradients

void BM_Memcpy(benchmark::State& state) {
  std::vector<uint8_t> a(kBytes, 1), out(kBytes);
  for (auto _ : state) {
    std::memcpy(out.data(), a.data(), kBytes);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * 2 * kBytes);
}
BENCHMARK(BM_Memcpy)->UseRealTime();
// Two cores copying at once, each its own buffers, as the two ranks of a
// local collective do: bytes_per_second is both threads' together, less than
// twice one core's where the cores share the memory system (on the CI VM
// anywhere from one core's rate to twice it, from one run to the next:
// bench/compare.py's single-copy bound takes the median of several).
BENCHMARK(BM_Memcpy)->Threads(2)->UseRealTime();
// The same copy with streaming stores (kernels/cpu/streaming_copy.h): the C
// library's memcpy switches to them only past its non-temporal threshold,
// which it derives from the cache size cpuid reports (on the CI VM 320 MiB
// of L3, so a 240 MiB threshold: its 32 MiB copies store through the cache).
// The single-copy bound in bench/compare.py takes the faster of the two.
void BM_StreamingCopy(benchmark::State& state) {
  std::vector<uint8_t> a(kBytes, 1), out(kBytes);
  for (auto _ : state) {
    strata::kernels::streamingCopy(out.data(), a.data(), kBytes);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * 2 * kBytes);
}
BENCHMARK(BM_StreamingCopy)->UseRealTime();
BENCHMARK(BM_StreamingCopy)->Threads(2)->UseRealTime();

// Values like gradients: normal floats near 1, small integers.
void fillRealistic(strataDataType_t t, uint8_t* p, size_t count, double v) {
  for (size_t i = 0; i < count; ++i) {
    double x = v + double(i % 7) / 16;
    switch (t) {
      case strataFloat16: { uint16_t h = strata::kernels::floatToHalf(float(x)); std::memcpy(p + 2 * i, &h, 2); break; }
      case strataBfloat16: { uint16_t h = strata::kernels::floatToBf16(float(x)); std::memcpy(p + 2 * i, &h, 2); break; }
      case strataFloat32: { float f = float(x); std::memcpy(p + 4 * i, &f, 4); break; }
      case strataFloat64: std::memcpy(p + 8 * i, &x, 8); break;
      default: std::memset(p + i * strata::dtypeSize(t), int(i % 7 + 1), strata::dtypeSize(t)); break;
    }
  }
}

void BM_Reduce(benchmark::State& state) {
  auto dtype = strataDataType_t(state.range(0));
  auto op = strataRedOp_t(state.range(1));
  size_t count = kBytes / strata::dtypeSize(dtype);
  std::vector<uint8_t> a(kBytes), b(kBytes), out(kBytes);
  fillRealistic(dtype, a.data(), count, 1.25);  // normal numbers: no denormal slow paths
  fillRealistic(dtype, b.data(), count, 0.75);
  for (auto _ : state) {
    reduce(out.data(), a.data(), b.data(), count, dtype, op);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * 3 * kBytes);
  state.SetLabel(std::string(strata::dtypeName(dtype)) + " " + strata::redOpName(op) + " (" +
                 strata::kernels::isaName() + ")");
}
void kernelArgs(benchmark::internal::Benchmark* b) {
  for (int t = 0; t < strataNumTypes; ++t)
    for (int op = 0; op < 4; ++op) b->Args({t, op});
}
BENCHMARK(BM_Reduce)->Apply(kernelArgs)->UseRealTime();

// float32 sum with the output in streaming stores (reduceStreaming), as the
// executor writes a reduction's output larger than the cache: against
// BM_Reduce/8/0, what not reading the output's lines first saves.
void BM_ReduceStreaming(benchmark::State& state) {
  const size_t count = kBytes / sizeof(float);
  std::vector<uint8_t> a(kBytes), b(kBytes), out(kBytes);
  fillRealistic(strataFloat32, a.data(), count, 1.25);
  fillRealistic(strataFloat32, b.data(), count, 0.75);
  for (auto _ : state) {
    strata::kernels::reduceStreaming(out.data(), a.data(), b.data(), count, strataFloat32, strataSum);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * 3 * kBytes);
}
BENCHMARK(BM_ReduceStreaming)->UseRealTime();

void BM_PlanBuild(benchmark::State& state) {
  strata::CollArgs a;
  a.coll = strata::Coll::kAllReduce;
  a.nranks = int(state.range(0));
  a.count = size_t(state.range(1));
  strata::Config cfg;
  strata::OpDesc d;
  for (auto _ : state) benchmark::DoNotOptimize(strata::buildCollectivePlan(a, d, cfg));
  state.SetLabel("all_reduce, " + std::to_string(a.nranks) + " ranks, " + std::to_string(a.count * 4) + " B");
}
BENCHMARK(BM_PlanBuild)->Args({2, 2})->Args({8, 2})->Args({8, 16 << 20})->Args({64, 16 << 20});

}  // namespace

BENCHMARK_MAIN();
