#include "obs/op_clock.h"

#include <time.h>

#include <cstdio>
#include <cstring>

namespace strata {
namespace opclock {

namespace {

// Whether the kernel keeps time with the time-stamp counter: then it is
// constant-rate and the same on every core, and so usable here.
bool kernelUsesTsc() {
#if defined(__x86_64__)
  FILE* f = std::fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
  if (!f) return false;
  char name[32] = {0};
  bool tsc = std::fgets(name, sizeof(name), f) && std::strncmp(name, "tsc", 3) == 0 &&
             (name[3] == '\n' || name[3] == '\0');
  std::fclose(f);
  return tsc;
#else
  return false;
#endif
}

// Both clocks read together: the counter between two steady-clock reads
// taken at most 20 us apart (retried if the thread was preempted in between),
// the steady time being their midpoint.
struct Reading {
  uint64_t ticks, ns;
};

}  // namespace

const bool kCountsCycles = kernelUsesTsc();

uint64_t steadyNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

static Reading readBoth() {
  Reading r{};
  for (int tries = 0; tries < 100; ++tries) {
    uint64_t before = steadyNs();
    r.ticks = now();
    uint64_t after = steadyNs();
    r.ns = before + (after - before) / 2;
    if (after - before <= 20000) break;
  }
  return r;
}

// When the library is loaded: the origin of the rate and of conversions.
static const Reading kAnchor = readBoth();

double ticksPerUs() {
  if (!kCountsCycles) return 1000.0;
  Reading r;
  do {  // a span of at least 1 ms: the reads' jitter is then < 1e-4 of it
    r = readBoth();
  } while (r.ns - kAnchor.ns < 1000000);
  return double(r.ticks - kAnchor.ticks) * 1000.0 / double(r.ns - kAnchor.ns);
}

int64_t toSteadyUs(uint64_t ticks, double rate) {
  if (!kCountsCycles) return int64_t(ticks / 1000);
  double sinceAnchorUs = double(int64_t(ticks - kAnchor.ticks)) / rate;
  return int64_t(kAnchor.ns / 1000) + int64_t(sinceAnchorUs);
}

}  // namespace opclock
}  // namespace strata
