// strata-gpu-kernels: the CUDA reduce-and-copy kernel's bandwidth beside the
// device's own device-to-device copy (cudaMemcpyAsync), measured in the same
// run, alternating kinds rep by rep so that drift hits all alike. Bandwidth
// counts bytes read and written: a copy of S bytes moves 2S, a reduction of
// two S-byte inputs into one output 3S. Also fusion's pack of many tensors
// in one launch beside one copy per tensor and one copy of the total, and the
// time of a small launch.
//   strata-gpu-kernels [-s MiB] [-r reps] [-J file.json]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "kernels/cuda/cuda_kernels.h"

namespace {

void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "strata-gpu-kernels: %s: %s\n", what, cudaGetErrorString(e));
  std::exit(1);
}

struct Row {
  std::string name;
  double bytesMoved;  // per run
  std::function<void(cudaStream_t)> run;
  std::vector<double> ms;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  size_t mib = 256;
  int reps = 20;
  const char* json = nullptr;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "-s")) mib = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "-r")) reps = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "-J")) json = argv[i + 1];
  }
  if (strata::cuda::visibleDevices() == 0) {
    std::fprintf(stderr, "strata-gpu-kernels: no CUDA device visible; nothing to measure\n");
    return 77;
  }
  cudaDeviceProp prop;
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  const size_t bytes = mib << 20;
  void *a, *b, *out, *out2;
  for (void** p : {&a, &b, &out, &out2}) check(cudaMalloc(p, bytes), "cudaMalloc");
  check(cudaMemset(a, 0x3f, bytes), "memset");  // 0.748 as float32 and bfloat16, never zero
  check(cudaMemset(b, 0x3e, bytes), "memset");
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");

  // unbounded: the 16-bit sum as built before its register bound (cuda_kernels.h).
  auto reduceCopy = [&](strataDataType_t dtype, int nsrc, int ndst, size_t count, bool unbounded = false) {
    return [=](cudaStream_t s) {
      strata::cuda::ReduceCopyArgs args;
      args.src[0] = a;
      for (int i = 1; i < nsrc; ++i) args.src[i] = b;
      args.dst[0] = out;
      args.dst[1] = out2;
      args.nsrc = nsrc;
      args.ndst = ndst;
      args.count = count;
      const std::string error = unbounded ? strata::cuda::enqueueReduceCopyUnboundedRegisters(args, dtype, s)
                                          : strata::cuda::enqueueReduceCopy(args, dtype, strataSum, s);
      if (!error.empty()) {
        std::fprintf(stderr, "strata-gpu-kernels: %s\n", error.c_str());
        std::exit(1);
      }
    };
  };
  const double S = double(bytes);
  std::vector<Row> rows = {
      {"device-to-device copy (cudaMemcpyAsync)", 2 * S,
       [&](cudaStream_t s) { check(cudaMemcpyAsync(out, a, bytes, cudaMemcpyDeviceToDevice, s), "copy"); }},
      {"strata copy kernel (1 source, 1 destination)", 2 * S, reduceCopy(strataFloat32, 1, 1, bytes / 4)},
      {"strata reduce float32 (2 sources, 1 destination)", 3 * S, reduceCopy(strataFloat32, 2, 1, bytes / 4)},
      {"strata reduce bfloat16 (2 sources, 1 destination)", 3 * S, reduceCopy(strataBfloat16, 2, 1, bytes / 2)},
      {"strata reduce float16 (2 sources, 1 destination)", 3 * S, reduceCopy(strataFloat16, 2, 1, bytes / 2)},
      {"strata reduce bfloat16, registers unbounded (one block a multiprocessor)", 3 * S,
       reduceCopy(strataBfloat16, 2, 1, bytes / 2, true)},
      {"strata reduce float16, registers unbounded (one block a multiprocessor)", 3 * S,
       reduceCopy(strataFloat16, 2, 1, bytes / 2, true)},
      {"strata reduce-and-copy float32 (2 sources, 2 destinations)", 4 * S,
       reduceCopy(strataFloat32, 2, 2, bytes / 4)},
  };
  // Fusion's pack: many tensors into one buffer in one launch, against one
  // cudaMemcpyAsync per tensor and against one copy of the same total bytes.
  struct PackCase {
    const char* name;
    std::vector<uint64_t> sizes;
  };
  std::vector<PackCase> packCases = {{"1000 x 4 KiB", std::vector<uint64_t>(1000, 4096)}, {"200 mixed, ~100 MiB", {}}};
  uint64_t lcg = 12345;
  for (int i = 0; i < 200; ++i) {
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    packCases[1].sizes.push_back(4 * (1 + (lcg >> 33) % (2 * 131072)));
  }
  for (const PackCase& pc : packCases) {
    std::vector<strata::cuda::CopySegment> table;
    uint64_t total = 0;
    for (uint64_t size : pc.sizes) {
      strata::cuda::CopySegment seg;
      seg.src = static_cast<const char*>(a) + total;  // tensors laid out in a, packed into out
      seg.dst = static_cast<char*>(out) + total;
      seg.bytes = size;
      table.push_back(seg);
      total += size;
    }
    if (total > bytes) {
      std::fprintf(stderr, "strata-gpu-kernels: pack %s left out: it needs -s %llu or more\n", pc.name,
                   static_cast<unsigned long long>((total >> 20) + 1));
      continue;
    }
    const uint64_t chunks = strata::cuda::planMultiCopy(table.data(), int(table.size()));
    strata::cuda::CopySegment* deviceTable = nullptr;
    check(cudaMalloc(&deviceTable, table.size() * sizeof(table[0])), "cudaMalloc");
    check(cudaMemcpy(deviceTable, table.data(), table.size() * sizeof(table[0]), cudaMemcpyHostToDevice), "table");
    const int n = int(table.size());
    const std::string label = pc.name;
    rows.push_back({"pack " + label + ": strata multi-copy, one launch", 2.0 * double(total),
                    [=](cudaStream_t s) {
                      const std::string e = strata::cuda::enqueueMultiCopy(deviceTable, n, chunks, s);
                      if (!e.empty()) {
                        std::fprintf(stderr, "strata-gpu-kernels: %s\n", e.c_str());
                        std::exit(1);
                      }
                    }});
    rows.push_back({"pack " + label + ": one cudaMemcpyAsync per tensor", 2.0 * double(total),
                    [=](cudaStream_t s) {
                      for (const auto& seg : table)
                        check(cudaMemcpyAsync(seg.dst, seg.src, seg.bytes, cudaMemcpyDeviceToDevice, s), "copy");
                    }});
    rows.push_back({"pack " + label + ": one cudaMemcpyAsync of the total", 2.0 * double(total),
                    [=](cudaStream_t s) {
                      check(cudaMemcpyAsync(out, a, total, cudaMemcpyDeviceToDevice, s), "copy");
                    }});
  }
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "event");
  check(cudaEventCreate(&stop), "event");
  for (Row& r : rows)
    for (int w = 0; w < 3; ++w) r.run(stream);
  check(cudaStreamSynchronize(stream), "warm-up");
  for (int rep = 0; rep < reps; ++rep) {
    for (size_t k = 0; k < rows.size(); ++k) {
      Row& r = rows[(k + size_t(rep)) % rows.size()];  // rotate the order rep by rep
      check(cudaEventRecord(start, stream), "record");
      r.run(stream);
      check(cudaEventRecord(stop, stream), "record");
      check(cudaEventSynchronize(stop), "sync");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, start, stop), "elapsed");
      r.ms.push_back(ms);
    }
  }
  // A small launch: GPU time per launch over back-to-back launches, and the
  // host time one enqueue takes.
  auto small = reduceCopy(strataFloat32, 2, 1, 2);
  const int launches = 2000;
  check(cudaEventRecord(start, stream), "record");
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < launches; ++i) small(stream);
  const auto t1 = std::chrono::steady_clock::now();
  check(cudaEventRecord(stop, stream), "record");
  check(cudaEventSynchronize(stop), "sync");
  float smallMs = 0;
  check(cudaEventElapsedTime(&smallMs, start, stop), "elapsed");
  const double enqueueUs = std::chrono::duration<double, std::micro>(t1 - t0).count() / launches;
  const double launchUs = smallMs * 1000.0 / launches;

  const double copyGBs = rows[0].bytesMoved / (median(rows[0].ms) * 1e6);
  std::printf("%s, %d multiprocessors, %.0f GiB; %zu MiB buffers, median of %d runs.\n\n", prop.name,
              prop.multiProcessorCount, double(prop.totalGlobalMem) / (1 << 30), mib, reps);
  std::printf("| what | bytes moved per run | median ms | GB/s median (min-max) | / device copy |\n");
  std::printf("| --- | ---: | ---: | ---: | ---: |\n");
  for (Row& r : rows) {
    const double med = median(r.ms);
    const double lo = *std::min_element(r.ms.begin(), r.ms.end()), hi = *std::max_element(r.ms.begin(), r.ms.end());
    const double gbs = r.bytesMoved / (med * 1e6);
    std::printf("| %s | %.0f MiB | %.3f | %.0f (%.0f-%.0f) | %.2f |\n", r.name.c_str(), r.bytesMoved / (1 << 20),
                med, gbs, r.bytesMoved / (hi * 1e6), r.bytesMoved / (lo * 1e6), gbs / copyGBs);
  }
  std::printf("\nsmall launch (2 float32 elements, 2 sources): %.2f us of GPU time each back to back, %.2f us "
              "to enqueue\n",
              launchUs, enqueueUs);
  if (json) {
    FILE* f = std::fopen(json, "w");
    if (!f) {
      std::perror(json);
      return 1;
    }
    std::fprintf(f, "{\"device\": \"%s\", \"sms\": %d, \"mib\": %zu, \"reps\": %d, \"rows\": [", prop.name,
                 prop.multiProcessorCount, mib, reps);
    for (size_t k = 0; k < rows.size(); ++k) {
      std::fprintf(f, "%s{\"name\": \"%s\", \"bytes_moved\": %.0f, \"ms\": [", k ? ", " : "", rows[k].name.c_str(),
                   rows[k].bytesMoved);
      for (size_t i = 0; i < rows[k].ms.size(); ++i) std::fprintf(f, "%s%.5f", i ? ", " : "", rows[k].ms[i]);
      std::fprintf(f, "]}");
    }
    std::fprintf(f, "], \"small_launch_gpu_us\": %.3f, \"small_enqueue_us\": %.3f}\n", launchUs, enqueueUs);
    std::fclose(f);
  }
  return 0;
}
