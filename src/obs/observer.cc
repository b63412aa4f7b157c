#include "obs/observer.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "bootstrap/socket.h"
#include "core/dtype.h"
#include "core/config.h"
#include "core/error.h"
#include "core/log.h"
#include "obs/op_clock.h"
#include "obs/trace_sink.h"
#include "topo/topology.h"

namespace strata {

namespace {

// Copies the descriptor runCollective has just written in part (seq, the
// fusion fields) field by field: one wide copy loads 16 bytes across narrow
// stores still in flight, which the CPU cannot forward (measured: ~40% of
// begin()'s time on a repeated 8-byte call). The compiler-only fences keep
// the fields from being merged back into wide loads.
void copyDescriptor(OpDesc& to, const OpDesc& from) {
  to.coll = from.coll;
  to.dtype = from.dtype;
  to.redop = from.redop;
  to.root = from.root;
  to.count = from.count;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  to.seq = from.seq;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  to.fusedTensors = from.fusedTensors;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  to.layout = from.layout;
}

int64_t wallUs() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}


}  // namespace

Observer::Observer(const ObserverIdentity& who, const Config& config, const Topology* topo)
    : who_(who), config_(config), topo_(topo), steadyToWallUs_(wallUs() - nowUs()),
      recorder_(size_t(std::max(0, config.flightRecorderEntries))), stats_(who.nranks),
      transportOf_(new std::atomic<uint8_t>[size_t(who.nranks)]) {
  for (int p = 0; p < who.nranks; ++p) transportOf_[size_t(p)].store(uint8_t(strataNumTransports));
  if (!config.traceFile.empty() && !kTracingBuilt)
    STRATA_WARN("STRATA_TRACE_FILE is set but this build has no tracing (-DSTRATA_TRACING=OFF)");
  if (!config.traceFile.empty() && kTracingBuilt) {
    trace_ = &TraceSink::open(config.traceFile, who.rank);
    traceTid_ = trace_->addThread(format("comm %08llx rank %d of %d",
                                         (unsigned long long)(who.commTag & 0xffffffffu), who.rank,
                                         who.nranks));
  }
}

Observer::~Observer() {
  if (trace_) trace_->flush();
}

std::string Observer::who() const {
  return format("rank %d of %d (pid %d, comm %08llx)", who_.rank, who_.nranks, int(getpid()),
                (unsigned long long)(who_.commTag & 0xffffffffu));
}

uint64_t Observer::begin(const Plan& plan, bool p2p, uint64_t startTick, bool publishAtStart,
                         uint32_t timeWeight) {
  OpFacts& r = running_;
  r.timeWeight = timeWeight;
  r.startTick = !timeWeight ? 0 : startTick ? startTick : opclock::now();
  r.id = recorder_.nextId();
  if (plan.ops.empty()) r.desc = OpDesc{};
  else copyDescriptor(r.desc, plan.ops[0]);
  r.p2p = p2p;
  r.bytes = 0;
  if (p2p) {
    r.desc.count = plan.ops.size();
    for (size_t i = 0; i < plan.peers.size(); ++i) r.bytes += plan.bytesTo[i] + plan.bytesFrom[i];
  } else {
    r.bytes = dataBytes(r.desc, who_.nranks);
  }
  r.algorithm = plan.algorithmName;
  r.state = OpState::kRunning;
  r.endTick = 0;
  r.waitUs = 0;
  runningPublished_ = publishAtStart;
  if (publishAtStart) recorder_.publishStart(r);
  current_.store(r.id, std::memory_order_relaxed);
  return r.id;
}

void Observer::end(uint64_t id, const Plan& plan, const ExecProbe& probe, const char* error) {
  OpFacts& r = running_;
  const uint64_t end = r.startTick ? opclock::now() : 0;
  if (r.id != id) return;
  current_.store(0, std::memory_order_relaxed);
  r.state = error ? OpState::kFailed : OpState::kDone;
  r.endTick = end;
  r.waitUs = probe.waitUs;
  if (runningPublished_) recorder_.publishEnd(r);
  else recorder_.publishStart(r);  // the whole record at once
  if (error) recorder_.setNote(id, error);
  stats_.add(r, &plan, transportOf_.get(), size_t(who_.nranks));
  if (!trace_) return;
  OpRecord traced;
  static_cast<OpFacts&>(traced) = r;
  if (error) traced.note = error;
  traced.fillMicroseconds(opclock::ticksPerUs());
  trace(traced, plan, probe);
}

bool Observer::repeatFacts(const Plan& plan, RepeatFacts& facts) {
  if (plan.ops.size() != 1) return false;
  facts = RepeatFacts{};
  facts.key = ++repeatKeys_;
  facts.coll = statCollOf(plan.ops[0].coll);
  facts.bytes = dataBytes(plan.ops[0], who_.nranks);
  for (size_t i = 0; i < plan.peers.size(); ++i) {
    const int peer = plan.peers[i];
    const unsigned t = peer >= 0 && peer < who_.nranks ? transportOf_[size_t(peer)].load(std::memory_order_relaxed)
                                                      : unsigned(strataNumTransports);
    if (t >= strataNumTransports || (facts.transport != strataNumTransports && t != facts.transport))
      return false;  // a link not open yet, or a second transport: end()'s accounting
    facts.transport = t;
    facts.sent += plan.bytesTo[i];
    facts.received += plan.bytesFrom[i];
  }
  return true;
}

void Observer::fillRunningFromRepeated() {
  const Repeated& x = repeated_;
  OpFacts& r = running_;
  r.id = recorder_.nextId();
  current_.store(r.id, std::memory_order_relaxed);
  r.timeWeight = x.timeWeight;
  r.startTick = x.startTick;
  copyDescriptor(r.desc, x.plan->ops[0]);
  r.p2p = false;
  r.bytes = x.facts->bytes;
  r.algorithm = x.plan->algorithmName;
  r.state = OpState::kRunning;
  r.endTick = 0;
  r.waitUs = 0;
  runningPublished_ = false;
  repeated_.plan = nullptr;
}

void Observer::endRepeated(const Plan& plan, const ExecProbe& probe, const char* error) {
  if (error || !repeated_.plan) {  // failed, or a long wait made it a record of its own (longWait)
    if (repeated_.plan) fillRunningFromRepeated();
    end(running_.id, plan, probe, error);
    return;
  }
  const Repeated& x = repeated_;
  const uint64_t endTick = x.startTick ? opclock::now() : 0;
  recorder_.publishRepeat(x.facts->key, x.plan->ops[0], x.plan->algorithmName, x.facts->bytes, x.startTick,
                          endTick, probe.waitUs);
  stats_.addRepeated(*x.facts, x.timeWeight, x.startTick, endTick, probe.waitUs);
  repeated_.plan = nullptr;
}

void Observer::longWait(const std::string& whatItWaitsFor, int64_t waitedUs) {
  if (repeated_.plan) fillRunningFromRepeated();
  const uint64_t id = current_.load(std::memory_order_relaxed);
  if (!id) return;
  if (!running_.startTick) {  // not timed: it started about when its wait did
    running_.startTick = opclock::now() - uint64_t(double(waitedUs) * opclock::ticksPerUs());
    running_.timeWeight = 1;
  }
  if (!runningPublished_) {  // a deferred record (begin): a dump must show the operation now
    recorder_.publishStart(running_);
    runningPublished_ = true;
  }
  recorder_.setNote(id, whatItWaitsFor);
}

void Observer::linkOpened(int peer, unsigned transport) {
  if (peer >= 0 && peer < who_.nranks) transportOf_[size_t(peer)].store(uint8_t(transport), std::memory_order_relaxed);
  stats_.linkOpened(transport);
}

strataStats_t Observer::stats() const { return stats_.totals(); }

std::string Observer::statsSummary() const { return CommStats::summary(stats(), who()); }

void Observer::dump(const std::string& why, const std::vector<std::string>& context) noexcept {
  try {
    if (!recorder_.enabled()) return;
    std::vector<OpRecord> ops = recorder_.snapshot();
    std::string text = FlightRecorder::format(
        format("strata flight recorder: %s, dumped on %s", who().c_str(), why.c_str()), context, ops,
        steadyToWallUs_, nowUs());
    FILE* out = stderr;
    if (!config_.flightRecorderFile.empty()) {
      std::string path = expandFilePattern(config_.flightRecorderFile, who_.rank);
      out = std::fopen(path.c_str(), "a");
      if (!out) {
        STRATA_WARN("cannot open STRATA_FLIGHT_RECORDER_FILE %s; dumping to stderr", path.c_str());
        out = stderr;
      }
    }
    std::fwrite(text.data(), 1, text.size(), out);
    if (out != stderr) std::fclose(out);
    else std::fflush(stderr);
  } catch (...) {
  }
}

// One operation as trace events: the operation, its phases grouped by where
// their peers are (inter-node / intra-node / local), and inside them the spans
// spent in reduce / copy kernels and waiting for peers.
void Observer::trace(const OpRecord& r, const Plan& plan, const ExecProbe& probe) {
  auto ts = [&](int64_t steady) { return steady + steadyToWallUs_; };
  const OpDesc& d = r.desc;
  std::string args = format(
      "\"comm\":\"%08llx\",\"rank\":%d,\"nranks\":%d,\"seq\":%llu,\"coll\":\"%s\",\"count\":%llu,"
      "\"dtype\":\"%s\",\"bytes\":%llu,\"algorithm\":\"%s\",\"wait_us\":%lld,\"state\":\"%s\"",
      (unsigned long long)(who_.commTag & 0xffffffffu), who_.rank, who_.nranks,
      (unsigned long long)d.seq, r.p2p ? "send_recv" : collName(d.coll), (unsigned long long)d.count,
      dtypeName(d.dtype), (unsigned long long)r.bytes, jsonEscape(r.algorithm).c_str(),
      (long long)r.waitUs, opStateName(r.state));
  if (r.state == OpState::kFailed) args += format(",\"error\":\"%s\"", jsonEscape(r.note).c_str());
  auto event = [&](const std::string& name, const char* cat, int64_t start, int64_t end,
                   const std::string& extra) {
    trace_->write(format("{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,"
                         "\"ts\":%lld,\"dur\":%lld,\"args\":{%s}}",
                         jsonEscape(name).c_str(), cat, trace_->pid(), traceTid_,
                         (long long)ts(start), (long long)std::max<int64_t>(end - start, 0),
                         extra.c_str()));
  };
  event(r.name(), "collective", r.startUs, r.endUs, args);

  static const char* classNames[] = {"local copy", "intra-node", "inter-node"};
  auto classOf = [&](const Phase& ph) {
    int cls = 0;
    for (uint32_t i = 0; i < ph.count; ++i) {
      const Flow& f = plan.flows[ph.first + i];
      for (int peer : {f.peer, f.forwardPeer}) {
        if (peer < 0) continue;
        if (topo_ && topo_->nodeOf(peer) != topo_->nodeOf(who_.rank)) return 2;
        cls = 1;
      }
    }
    return cls;
  };
  for (size_t i = 0; i < probe.phases.size();) {
    int cls = classOf(plan.phases[probe.phases[i].phase]);
    size_t j = i;
    int64_t wait = 0, kernel = 0;
    while (j < probe.phases.size() && classOf(plan.phases[probe.phases[j].phase]) == cls) {
      wait += probe.phases[j].waitUs;
      kernel += probe.phases[j].kernelUs;
      ++j;
    }
    event(classNames[cls], "phase", probe.phases[i].startUs, probe.phases[j - 1].endUs,
          format("\"phases\":\"%u-%u\",\"wait_us\":%lld,\"kernel_us\":%lld", probe.phases[i].phase,
                 probe.phases[j - 1].phase, (long long)wait, (long long)kernel));
    i = j;
  }
  for (const ExecProbe::Span& k : probe.kernels) event("kernel/copy", "kernel", k.startUs, k.endUs, "");
  for (const ExecProbe::Span& w : probe.waits) event("waiting for peers", "wait", w.startUs, w.endUs, "");
  if (r.state == OpState::kFailed) trace_->flush();
}

}  // namespace strata
