// The round trip of one cache line between two cores: two threads, pinned to
// the first two CPUs this process may run on, pass one line back and forth
// (each waits for the other's value, then stores its own). It is the floor
// under every hand-over between two local ranks (a shm slot's word, its
// release), and it is what tells this VM's two states apart: 97-101 ns in
// the usual one, 380-460 ns in the slow one, where tiny streams took 2.8x
// as long (docs/benchmarks/tiny-calls.md). bench/compare.py times it before
// each launch of the local scenario, so a report says which state each
// measurement met. Real time per iteration is one round trip.
#include <benchmark/benchmark.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <cstdint>
#include <thread>

namespace {

// The first two CPUs of this process's affinity set; false if it has fewer.
bool firstTwoCpus(int* a, int* b) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return false;
  int found = 0;
  for (int c = 0; c < CPU_SETSIZE && found < 2; ++c)
    if (CPU_ISSET(c, &set)) (found++ == 0 ? *a : *b) = c;
  return found == 2;
}

void pinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

void BM_LineRoundTrip(benchmark::State& state) {
  // The CPUs are looked up once: this thread is pinned to the first while
  // it runs (and set free again after), and the function runs several times.
  static int mine = -1, other = -1;
  static const bool found = firstTwoCpus(&mine, &other);
  if (!found) {
    state.SkipWithError("needs two CPUs");
    return;
  }
  alignas(64) static std::atomic<uint64_t> line;
  line.store(0);
  constexpr uint64_t kStop = ~uint64_t(0);
  // The partner answers each odd value with the next even one.
  std::thread partner([&] {
    pinTo(other);
    for (uint64_t want = 1;; want += 2) {
      uint64_t v;
      while ((v = line.load(std::memory_order_acquire)) != want && v != kStop) {
      }
      if (v == kStop) return;
      line.store(want + 1, std::memory_order_release);
    }
  });
  cpu_set_t allowed;
  sched_getaffinity(0, sizeof allowed, &allowed);
  pinTo(mine);
  uint64_t next = 1;
  for (auto _ : state) {
    line.store(next, std::memory_order_release);
    while (line.load(std::memory_order_acquire) != next + 1) {
    }
    next += 2;
  }
  line.store(kStop, std::memory_order_release);
  partner.join();
  sched_setaffinity(0, sizeof allowed, &allowed);
}
BENCHMARK(BM_LineRoundTrip)->UseRealTime();

}  // namespace
