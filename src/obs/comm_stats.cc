#include "obs/comm_stats.h"

#include "core/error.h"
#include "obs/op_clock.h"

namespace strata {

void CommStats::add(const OpRecord& r, const Plan* plan, const std::vector<uint8_t>& transportOf) {
  strataStatColl_t k = statCollOf(r);
  strataCollStats_t& c = totals_.coll[k];
  uint64_t ticks = r.endTick - r.startTick;
  if (r.state == OpState::kFailed) {
    c.failed++;
  } else {
    c.calls++;
    c.bytes += r.bytes;
    c.busBytes += double(r.bytes) * r.busFactor;
  }
  collTicks_[k] += ticks;
  c.waitSeconds += double(r.waitUs) * 1e-6;
  if (!plan) return;
  bool used[strataNumTransports] = {false};
  for (size_t i = 0; i < plan->peers.size(); ++i) {
    size_t peer = size_t(plan->peers[i]);
    unsigned t = peer < transportOf.size() ? transportOf[peer] : unsigned(strataNumTransports);
    if (t >= strataNumTransports) continue;
    totals_.transport[t].bytesSent += plan->bytesTo[i];
    totals_.transport[t].bytesReceived += plan->bytesFrom[i];
    used[t] = true;
  }
  for (unsigned t = 0; t < strataNumTransports; ++t)
    if (used[t]) transportTicks_[t] += ticks;
}

strataStats_t CommStats::totals() const {
  strataStats_t t = totals_;
  double secondsPerTick = 1e-6 / opclock::ticksPerUs();
  for (int i = 0; i < strataNumStatColls; ++i) t.coll[i].seconds = double(collTicks_[i]) * secondsPerTick;
  for (int i = 0; i < strataNumTransports; ++i)
    t.transport[i].seconds = double(transportTicks_[i]) * secondsPerTick;
  return t;
}

void CommStats::linkOpened(unsigned transport) {
  if (transport < strataNumTransports) totals_.transport[transport].links++;
}

std::string CommStats::summary(const strataStats_t& t, const std::string& who) {
  static const char* transports[] = {"shm", "ofi", "ucx", "tcp"};
  std::string s = format("strata stats: %s\n", who.c_str());
  s += format("  %-15s %8s %7s %16s %12s %12s %11s\n", "collective", "calls", "failed", "bytes",
              "time_ms", "wait_ms", "busbw_GB/s");
  for (int i = 0; i < strataNumStatColls; ++i) {
    const strataCollStats_t& c = t.coll[i];
    if (!c.calls && !c.failed) continue;
    s += format("  %-15s %8llu %7llu %16llu %12.3f %12.3f %11.3f\n", statCollName(strataStatColl_t(i)),
                (unsigned long long)c.calls, (unsigned long long)c.failed,
                (unsigned long long)c.bytes, c.seconds * 1e3, c.waitSeconds * 1e3,
                c.seconds > 0 ? c.busBytes / c.seconds / 1e9 : 0.0);
  }
  s += format("  %-15s %8s %16s %16s %12s\n", "transport", "links", "sent", "received", "time_ms");
  for (int i = 0; i < strataNumTransports; ++i) {
    const strataTransportStats_t& x = t.transport[i];
    if (!x.links) continue;
    s += format("  %-15s %8llu %16llu %16llu %12.3f\n", transports[i], (unsigned long long)x.links,
                (unsigned long long)x.bytesSent, (unsigned long long)x.bytesReceived,
                x.seconds * 1e3);
  }
  return s;
}

}  // namespace strata
