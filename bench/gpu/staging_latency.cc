// strata-gpu-staging: where a host-staged device step's time goes, on one
// GPU in one process. Host staging (src/device/device_queue.h) hands each
// piece between the GPU and the proxy thread twice: the proxy polls the
// piece's ready event (spinning 200 us, then sleeping 50 us at a time), and
// the stream waits on a pinned counter the proxy raises. On the H200 of
// 2026-11-26/28 a one-rank staged call took ~2.03 ms whatever its size up to
// 64 KiB, close to a multiple of a timer tick. This times each hand-over
// alone, the median and maximum of many samples:
//   - a 50 us sleep (std::this_thread::sleep_for), as the proxy's poll naps;
//   - an 8-byte copy from the device to pinned memory until its event is seen
//     done by a spinning host (the ready event's path);
//   - the host raising the counter until an event after the stream's wait is
//     seen done (the counter's path), by cuStreamWaitValue64 and by the
//     polling kernel (STRATA_DEVICE_WAIT_KERNEL=1).
//   strata-gpu-staging [-n samples]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/device_runtime.h"

namespace {

using Clock = std::chrono::steady_clock;

void check(const std::string& error) {
  if (error.empty()) return;
  std::fprintf(stderr, "strata-gpu-staging: %s\n", error.c_str());
  std::exit(1);
}

double usSince(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

void spinUntilDone(void* event) {
  for (bool done = false; !done;) check(strata::cuda::queryEvent(event, &done));
}

struct Stats {
  double median, p90, max;
};

Stats statsOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v[v.size() * 9 / 10], v.back()};
}

}  // namespace

int main(int argc, char** argv) {
  int samples = 500;
  for (int i = 1; i + 1 < argc; i += 2)
    if (!std::strcmp(argv[i], "-n")) samples = std::max(10, std::atoi(argv[i + 1]));
  if (strata::cuda::visibleDevices() == 0) {
    std::fprintf(stderr, "strata-gpu-staging: no CUDA device visible; nothing to measure\n");
    return 77;
  }
  check(strata::cuda::setDevice(0));
  check(strata::cuda::loadKernels());
  void *stream = nullptr, *event = nullptr, *pinned = nullptr, *device = nullptr;
  check(strata::cuda::createStream(&stream));
  check(strata::cuda::createEvent(&event));
  check(strata::cuda::allocPinned(4096, &pinned));
  check(strata::cuda::allocDevice(4096, &device));
  auto* counter = static_cast<uint64_t*>(pinned);
  __atomic_store_n(counter, uint64_t(0), __ATOMIC_RELEASE);

  struct Row {
    const char* name;
    std::vector<double> us;
  };
  std::vector<Row> rows;

  Row& sleep = rows.emplace_back(Row{"host: std::this_thread::sleep_for(50 us)", {}});
  for (int i = 0; i < samples; ++i) {
    const Clock::time_point t = Clock::now();
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    sleep.us.push_back(usSince(t));
  }

  Row& copy = rows.emplace_back(Row{"8 B device -> pinned copy, then its event seen done (spinning)", {}});
  for (int i = 0; i < samples; ++i) {
    const Clock::time_point t = Clock::now();
    check(strata::cuda::copyAsync(static_cast<char*>(pinned) + 64, device, 8, stream));
    check(strata::cuda::recordEvent(event, stream));
    spinUntilDone(event);
    copy.us.push_back(usSince(t));
  }

  uint64_t ticket = 0;
  for (bool kernel : {false, true}) {
    Row& wait = rows.emplace_back(Row{kernel ? "counter raised -> the stream's polling kernel lets it go (event seen done)"
                                             : "counter raised -> cuStreamWaitValue64 lets the stream go (event seen done)",
                                      {}});
    for (int i = 0; i < samples; ++i) {
      ++ticket;
      check(strata::cuda::streamWaitCounter(stream, counter, ticket, kernel));
      check(strata::cuda::recordEvent(event, stream));
      // Let the stream reach its wait before the counter moves.
      const Clock::time_point parked = Clock::now();
      while (usSince(parked) < 100) {
      }
      const Clock::time_point t = Clock::now();
      __atomic_store_n(counter, ticket, __ATOMIC_RELEASE);
      spinUntilDone(event);
      wait.us.push_back(usSince(t));
    }
  }

  std::printf("One process, one stream, %d samples each (us):\n\n", samples);
  std::printf("| hand-over | median | p90 | max |\n| --- | ---: | ---: | ---: |\n");
  for (const Row& r : rows) {
    const Stats s = statsOf(r.us);
    std::printf("| %s | %.1f | %.1f | %.1f |\n", r.name, s.median, s.p90, s.max);
  }
  strata::cuda::freeDevice(device);
  strata::cuda::freePinned(pinned);
  strata::cuda::destroyEvent(event);
  strata::cuda::destroyStream(stream);
  return 0;
}
