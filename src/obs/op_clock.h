// The clock of the per-operation records (flight recorder, statistics): read
// twice per operation, so it must cost little. On x86-64, where the kernel
// itself keeps time with the CPU's time-stamp counter (clocksource "tsc",
// which Linux picks only when the counter is constant-rate and synchronized
// across cores), it reads the counter: ~10 ns, against ~26 ns for
// clock_gettime on the machines measured. Elsewhere it reads the steady clock
// in nanoseconds. Ticks become steady-clock microseconds only when records
// are read (dumps, statistics, traces), at a rate measured against the
// steady clock over the whole time since the library was loaded.
#pragma once

#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace strata {
namespace opclock {

extern const bool kCountsCycles;  // ticks are time-stamp counter cycles (else nanoseconds)
uint64_t steadyNs();

inline uint64_t now() {
#if defined(__x86_64__)
  if (kCountsCycles) return __rdtsc();
#endif
  return steadyNs();
}

// Ticks per microsecond (waits until a millisecond has passed since the
// library was loaded, so that the first measurement is already precise).
double ticksPerUs();
// A tick count as steady-clock microseconds (the time base of nowUs()), at
// the rate `ticksPerUs` (measured once for many conversions).
int64_t toSteadyUs(uint64_t ticks, double ticksPerUs);
inline int64_t toSteadyUs(uint64_t ticks) { return toSteadyUs(ticks, ticksPerUs()); }

}  // namespace opclock
}  // namespace strata
