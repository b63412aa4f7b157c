// The operation clock (src/obs/op_clock.h): its ticks, converted, agree with
// the steady clock, for instants and for durations.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "bootstrap/socket.h"
#include "obs/op_clock.h"

namespace strata {
namespace {

TEST(OpClock, TicksConvertToTheSteadyClock) {
  for (int i = 0; i < 5; ++i) {
    int64_t before = nowUs();
    int64_t converted = opclock::toSteadyUs(opclock::now());
    int64_t after = nowUs();
    EXPECT_GE(converted, before - 2) << "cycles: " << opclock::kCountsCycles;
    EXPECT_LE(converted, after + 2) << "cycles: " << opclock::kCountsCycles;
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
  }
}

TEST(OpClock, DurationsMatchTheSteadyClock) {
  uint64_t t0 = opclock::now();
  int64_t s0 = nowUs();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  uint64_t t1 = opclock::now();
  int64_t s1 = nowUs();
  double tickUs = double(t1 - t0) / opclock::ticksPerUs();
  double steadyUs = double(s1 - s0);
  EXPECT_NEAR(tickUs, steadyUs, 0.02 * steadyUs + 5) << "cycles: " << opclock::kCountsCycles;
}

}  // namespace
}  // namespace strata
