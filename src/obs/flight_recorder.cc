#include "obs/flight_recorder.h"

#include <algorithm>
#include <ctime>
#include <string>

#include "core/dtype.h"
#include "core/error.h"
#include "obs/op_clock.h"

namespace strata {

FlightRecorder::FlightRecorder(size_t capacity)
    : capacity_(capacity), slots_(capacity ? new Slot[capacity] : nullptr),
      newest_(capacity ? capacity - 1 : 0), notes_(capacity) {}

void FlightRecorder::Slot::store(uint64_t opId, const OpDesc& desc, bool isP2p, const char* algorithmName,
                                 uint64_t dataBytes, uint64_t start, OpState opState, uint64_t end,
                                 int64_t waited) {
  constexpr auto relaxed = std::memory_order_relaxed;
  lock.beginWrite();
  id.store(opId, relaxed);
  coll.store(desc.coll, relaxed);
  dtype.store(desc.dtype, relaxed);
  redop.store(desc.redop, relaxed);
  root.store(desc.root, relaxed);
  count.store(desc.count, relaxed);
  seq.store(desc.seq, relaxed);
  repeats.store(1, relaxed);
  firstSeq.store(desc.seq, relaxed);
  fusedTensors.store(desc.fusedTensors, relaxed);
  layout.store(desc.layout, relaxed);
  p2p.store(isP2p, relaxed);
  algorithm.store(algorithmName, relaxed);
  bytes.store(dataBytes, relaxed);
  startTick.store(start, relaxed);
  state.store(opState, relaxed);
  endTick.store(end, relaxed);
  waitUs.store(waited, relaxed);
  lock.endWrite();
}

void FlightRecorder::publishStart(const OpFacts& f) {
  if (!capacity_) return;
  nextSlot().store(f.id, f.desc, f.p2p, f.algorithm, f.bytes, f.startTick, f.state, f.endTick, f.waitUs);
}

void FlightRecorder::openRun(uint64_t key, const OpDesc& desc, const char* algorithm, uint64_t bytes,
                             uint64_t startTick, uint64_t endTick, int64_t waitUs) {
  if (!capacity_) return;
  nextSlot().store(nextId(), desc, false, algorithm, bytes, startTick, OpState::kDone, endTick, waitUs);
  runKey_ = key;
}

void FlightRecorder::publishEnd(const OpFacts& f) {
  if (!capacity_) return;
  Slot& s = slots_[newest_];
  constexpr auto relaxed = std::memory_order_relaxed;
  if (s.id.load(relaxed) != f.id) return;
  s.lock.beginWrite();
  s.state.store(f.state, relaxed);
  s.endTick.store(f.endTick, relaxed);
  s.waitUs.store(f.waitUs, relaxed);
  s.lock.endWrite();
}

OpFacts FlightRecorder::Slot::load() const {
  constexpr auto relaxed = std::memory_order_relaxed;
  OpFacts f;
  f.id = id.load(relaxed);
  f.desc.coll = coll.load(relaxed);
  f.desc.dtype = dtype.load(relaxed);
  f.desc.redop = redop.load(relaxed);
  f.desc.root = root.load(relaxed);
  f.desc.count = count.load(relaxed);
  f.desc.seq = seq.load(relaxed);
  f.repeats = repeats.load(relaxed);
  f.firstSeq = firstSeq.load(relaxed);
  f.desc.fusedTensors = fusedTensors.load(relaxed);
  f.desc.layout = layout.load(relaxed);
  f.p2p = p2p.load(relaxed);
  f.algorithm = algorithm.load(relaxed);
  f.bytes = bytes.load(relaxed);
  f.startTick = startTick.load(relaxed);
  f.state = state.load(relaxed);
  f.endTick = endTick.load(relaxed);
  f.waitUs = waitUs.load(relaxed);
  return f;
}

void FlightRecorder::setNote(uint64_t id, const std::string& note) {
  if (!capacity_) return;
  std::lock_guard<std::mutex> lock(notesMu_);
  Note& n = notes_[id % capacity_];
  n.id = id;
  n.text = note;
}

std::vector<OpRecord> FlightRecorder::snapshot() const {
  std::vector<OpRecord> out;
  if (!capacity_) return out;
  out.reserve(capacity_);
  for (size_t i = 0; i < capacity_; ++i) {
    OpRecord r;
    const Slot& slot = slots_[i];
    // A record still being written after many tries (a writer stopped
    // inside a write) is left out rather than shown torn.
    if (!slot.lock.read([&] { static_cast<OpFacts&>(r) = slot.load(); })) continue;
    if (r.id != 0) out.push_back(std::move(r));
  }
  std::sort(out.begin(), out.end(), [](const OpRecord& a, const OpRecord& b) { return a.id < b.id; });
  const double ticksPerUs = opclock::ticksPerUs();
  std::lock_guard<std::mutex> lock(notesMu_);
  for (OpRecord& r : out) {
    const Note& n = notes_[r.id % capacity_];
    if (n.id == r.id) r.note = n.text;
    r.fillMicroseconds(ticksPerUs);
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
  s += strata::format("  %-34s %-22s %14s %-20s %-8s %-15s %12s %12s  %s\n", "operation", "shape",
                      "bytes", "algorithm", "state", "started", "duration_us", "wait_us",
                      "note");
  for (const OpRecord& r : ops) {
    std::string shape =
        r.p2p ? std::string("-")
              : strata::format("%s x %llu", dtypeName(r.desc.dtype), (unsigned long long)r.desc.count);
    int64_t end = r.state == OpState::kRunning ? nowSteadyUs : r.endUs;
    // A tiny call between timed ones read no clock (OpFacts::timeWeight).
    const bool timed = r.startTick != 0;
    s += strata::format("  %-34s %-22s %14llu %-20s %-8s %-15s %12s %12lld  %s\n", r.name().c_str(),
                        shape.c_str(), (unsigned long long)r.bytes, r.algorithm, opStateName(r.state),
                        timed ? wallClock(r.startUs + steadyToWallUs).c_str() : "(not timed)",
                        timed ? std::to_string(end - r.startUs).c_str() : "-", (long long)r.waitUs,
                        r.note.c_str());
  }
  if (ops.empty()) s += "  (no operations yet)\n";
  return s;
}

}  // namespace strata
