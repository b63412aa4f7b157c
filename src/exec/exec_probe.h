// What one run of a plan tells the observability layer (src/obs): the time
// spent waiting for peers (always: two clock reads per idle span), and, when
// tracing, the span of every phase and the time spent in reduction / copy
// kernels. A long wait is also reported while it lasts, so that a flight
// recorder dump of a hung rank (SIGUSR1) says what the rank is waiting for.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata {

// False in builds made with -DSTRATA_TRACING=OFF: the tracing branches vanish.
#ifdef STRATA_NO_TRACING
constexpr bool kTracingBuilt = false;
#else
constexpr bool kTracingBuilt = true;
#endif

// Receives the description of a wait that has lasted long (refreshed every second).
class LongWaitSink {
 public:
  virtual ~LongWaitSink() = default;
  // `waitedUs`: how long the wait has lasted.
  virtual void longWait(const std::string& whatItWaitsFor, int64_t waitedUs) = 0;
};

struct ExecProbe {
  int64_t waitUs = 0;              // total idle time (spinning, yielding, napping)
  LongWaitSink* longWaits = nullptr;

  // Tracing only (left empty when false).
  bool tracing = false;
  struct PhaseSpan {
    uint32_t phase = 0;
    int64_t startUs = 0, endUs = 0;  // steady clock (nowUs)
    int64_t waitUs = 0, kernelUs = 0;
  };
  struct Span {
    int64_t startUs = 0, endUs = 0;
  };
  std::vector<PhaseSpan> phases;
  std::vector<Span> waits;         // idle spans of at least kTracedWaitUs
  std::vector<Span> kernels;       // reduce / copy work (spans less than 5 us apart merged)
  static constexpr int64_t kTracedWaitUs = 20;
  static constexpr size_t kMaxTracedWaits = 2048;
  void addKernel(int64_t startUs, int64_t endUs) {
    if (!kernels.empty() && startUs - kernels.back().endUs < 5) {
      kernels.back().endUs = endUs;
    } else if (kernels.size() < kMaxTracedWaits) {
      kernels.push_back({startUs, endUs});
    }
  }
};

}  // namespace strata
