#include "obs/flight_recorder.h"

#include <ctime>

#include "core/dtype.h"
#include "core/error.h"
#include "obs/op_clock.h"

namespace strata {

OpRecord& FlightRecorder::start() {
  uint64_t id = next_++;
  if (ring_.empty()) {
    scratch_.id = id;
    return scratch_;
  }
  newest_ = newest_ + 1 == ring_.size() ? 0 : newest_ + 1;  // (id % size, without a division)
  ring_[newest_].id = id;
  return ring_[newest_];
}

OpRecord* FlightRecorder::find(uint64_t id) {
  if (ring_.empty()) return scratch_.id == id ? &scratch_ : nullptr;
  if (ring_[newest_].id == id) return &ring_[newest_];  // the running operation, almost always
  OpRecord& slot = ring_[id % ring_.size()];
  return slot.id == id ? &slot : nullptr;
}

std::vector<OpRecord> FlightRecorder::snapshot() const {
  std::vector<OpRecord> out;
  if (ring_.empty() || next_ == 1) return out;
  uint64_t first = next_ > ring_.size() ? next_ - ring_.size() : 1;
  const double ticksPerUs = opclock::ticksPerUs();
  for (uint64_t id = first; id < next_; ++id) {
    const OpRecord& r = ring_[id % ring_.size()];
    if (r.id == id) {
      out.push_back(r);
      out.back().fillMicroseconds(ticksPerUs);
    }
  }
  return out;
}

namespace {

std::string wallClock(int64_t wallUs) {
  time_t secs = time_t(wallUs / 1000000);
  struct tm tm;
  localtime_r(&secs, &tm);
  char buf[32];
  strftime(buf, sizeof(buf), "%H:%M:%S", &tm);
  return strata::format("%s.%06lld", buf, (long long)(wallUs % 1000000));
}

}  // namespace

std::string FlightRecorder::format(const std::string& header, const std::vector<std::string>& context,
                                   const std::vector<OpRecord>& ops, int64_t steadyToWallUs,
                                   int64_t nowSteadyUs) {
  std::string s = header + "\n";
  for (const std::string& line : context) s += "  " + line + "\n";
  s += strata::format("  %-28s %-22s %14s %-20s %-8s %-15s %12s %12s  %s\n", "operation", "shape",
                      "bytes", "algorithm", "state", "started", "duration_us", "wait_us",
                      "note");
  for (const OpRecord& r : ops) {
    std::string shape =
        r.p2p ? std::string("-")
              : strata::format("%s x %llu", dtypeName(r.desc.dtype), (unsigned long long)r.desc.count);
    int64_t end = r.state == OpState::kRunning ? nowSteadyUs : r.endUs;
    s += strata::format("  %-28s %-22s %14llu %-20s %-8s %-15s %12lld %12lld  %s\n", r.name().c_str(),
                        shape.c_str(), (unsigned long long)r.bytes, r.algorithm, opStateName(r.state),
                        wallClock(r.startUs + steadyToWallUs).c_str(), (long long)(end - r.startUs),
                        (long long)r.waitUs, r.note.c_str());
  }
  if (ops.empty()) s += "  (no operations yet)\n";
  return s;
}

}  // namespace strata
