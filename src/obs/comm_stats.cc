#include "obs/comm_stats.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "core/error.h"
#include "obs/op_clock.h"

namespace strata {

uint64_t CommStats::weightedTicks(CollTotals& c, uint32_t timeWeight, uint64_t startTick, uint64_t endTick) {
  if (!timeWeight) return 0;
  const uint64_t own = endTick - startTick, before = c.lastTimedTicks;
  c.lastTimedTicks = own;
  return own + uint64_t(timeWeight - 1) * std::min(own, before);
}

void CommStats::addToColl(CollTotals& c, bool failed, uint64_t bytes, uint64_t ticks, int64_t waitUs) {
  c.lock.beginWrite();
  if (failed) {
    c.failed.add(1);
  } else {
    c.calls.add(1);
    c.bytes.add(bytes);
  }
  c.ticks.add(ticks);
  if (waitUs) c.waitUs.add(uint64_t(waitUs));
  c.lock.endWrite();
}

void CommStats::addRepeatedInFull(const RepeatFacts& facts, uint32_t timeWeight, uint64_t startTick,
                                  uint64_t endTick, int64_t waitUs) {
  if (facts.key != run_.key) foldRun(facts);
  const uint64_t ticks = weightedTicks(coll_[facts.coll], timeWeight, startTick, endTick);
  run_.lock.beginWrite();
  run_.calls.add(1);
  run_.ticks.add(ticks);
  if (waitUs) run_.waitUs.add(uint64_t(waitUs));
  run_.lock.endWrite();
  serveSnapshot();
}

void CommStats::foldRun(const RepeatFacts& facts) {
  constexpr auto relaxed = std::memory_order_relaxed;
  RepeatRun& x = run_;
  x.lock.beginWrite();
  if (const uint64_t calls = x.calls.get()) {
    CollTotals& c = coll_[x.coll.load(relaxed)];
    c.lock.beginWrite();
    c.calls.add(calls);
    c.bytes.add(calls * x.bytes.load(relaxed));
    c.ticks.add(x.ticks.get());
    c.waitUs.add(x.waitUs.get());
    c.lock.endWrite();
    const unsigned t = x.transport.load(relaxed);
    if (t < strataNumTransports)
      addToTransport(t, calls * x.sent.load(relaxed), calls * x.received.load(relaxed), x.ticks.get());
  }
  x.key = facts.key;
  x.coll.store(unsigned(facts.coll), relaxed);
  x.transport.store(facts.transport, relaxed);
  x.bytes.store(facts.bytes, relaxed);
  x.sent.store(facts.sent, relaxed);
  x.received.store(facts.received, relaxed);
  x.calls.set(0);
  x.ticks.set(0);
  x.waitUs.set(0);
  x.lock.endWrite();
}

void CommStats::add(const OpFacts& r, const Plan* plan, const std::atomic<uint8_t>* transportOf,
                    size_t nranks) {
  serveSnapshot();  // before this call's writes: a snapshot is whole at any point between them
  CollTotals& c = coll_[statCollOf(r)];
  const uint64_t ticks = weightedTicks(c, r.timeWeight, r.startTick, r.endTick);
  addToColl(c, r.state == OpState::kFailed, r.bytes, ticks, r.waitUs);
  if (!plan) return;
  // Most plans reach all their peers over one transport: sum into scalars,
  // and fall back to per-transport arrays only when a second one shows up.
  auto transportTo = [&](size_t i) {  // >= strataNumTransports: no link yet
    const size_t peer = size_t(plan->peers[i]);
    return peer < nranks ? unsigned(transportOf[peer].load(std::memory_order_relaxed))
                         : unsigned(strataNumTransports);
  };
  unsigned only = strataNumTransports;
  uint64_t sentOnly = 0, receivedOnly = 0;
  size_t i = 0;
  for (; i < plan->peers.size(); ++i) {
    const unsigned t = transportTo(i);
    if (t >= strataNumTransports) continue;
    if (only != t && only != strataNumTransports) break;
    only = t;
    sentOnly += plan->bytesTo[i];
    receivedOnly += plan->bytesFrom[i];
  }
  if (i == plan->peers.size()) {
    if (only < strataNumTransports) addToTransport(only, sentOnly, receivedOnly, ticks);
    return;
  }
  uint64_t sent[strataNumTransports] = {}, received[strataNumTransports] = {};
  bool used[strataNumTransports] = {false};
  sent[only] = sentOnly;
  received[only] = receivedOnly;
  used[only] = true;
  for (; i < plan->peers.size(); ++i) {
    const unsigned t = transportTo(i);
    if (t >= strataNumTransports) continue;
    sent[t] += plan->bytesTo[i];
    received[t] += plan->bytesFrom[i];
    used[t] = true;
  }
  for (unsigned t = 0; t < strataNumTransports; ++t)
    if (used[t]) addToTransport(t, sent[t], received[t], ticks);
}

void CommStats::addToTransport(unsigned t, uint64_t sent, uint64_t received, uint64_t ticks) {
  TransportTotals& x = transport_[t];
  x.lock.beginWrite();
  x.bytesSent.add(sent);
  x.bytesReceived.add(received);
  x.ticks.add(ticks);
  x.lock.endWrite();
}

strataStats_t CommStats::totals() const {
  strataStats_t t{};
  if (readLive(t, liveTries_)) return t;
  // Starved: ask the writer, and go on trying meanwhile (a writer that
  // stopped writing answers no more, but then a copy of one's own is whole).
  const uint64_t ticket = snapshotsWanted_.fetch_add(1, std::memory_order_relaxed) + 1;
  for (;;) {
    if (snapshotsServed_.load(std::memory_order_acquire) >= ticket && readSnapshot(t)) return t;
    if (readLive(t, 16)) return t;
    std::this_thread::yield();
  }
}

bool CommStats::readLive(strataStats_t& t, int tries) const {
  const double secondsPerTick = 1e-6 / opclock::ticksPerUs();
  constexpr auto relaxed = std::memory_order_relaxed;
  bool entriesWhole = false;
  // Under the run's lock: a run folded into the totals meanwhile is counted once.
  const bool whole = run_.lock.read(
      [&] {
        entriesWhole = foldedTotals(t, secondsPerTick);
        const RepeatRun& x = run_;
        const uint64_t calls = x.calls.get();
        if (!calls) return;
        const auto coll = strataStatColl_t(x.coll.load(relaxed));
        strataCollStats_t& c = t.coll[coll];
        const uint64_t bytes = calls * x.bytes.load(relaxed);
        const double seconds = double(x.ticks.get()) * secondsPerTick;
        c.calls += calls;
        c.bytes += bytes;
        c.seconds += seconds;
        c.waitSeconds += double(x.waitUs.get()) * 1e-6;
        c.busBytes += double(bytes) * busFactor(coll, nranks_);
        const unsigned tr = x.transport.load(relaxed);
        if (tr >= strataNumTransports) return;
        t.transport[tr].bytesSent += calls * x.sent.load(relaxed);
        t.transport[tr].bytesReceived += calls * x.received.load(relaxed);
        t.transport[tr].seconds += seconds;
      },
      tries);
  return whole && entriesWhole;
}

bool CommStats::foldedTotals(strataStats_t& t, double secondsPerTick) const {
  t = strataStats_t{};
  bool whole = true;
  for (int i = 0; i < strataNumStatColls; ++i) {
    const CollTotals& c = coll_[i];
    whole &= c.lock.read([&] {
      const uint64_t bytes = c.bytes.get();
      t.coll[i] = strataCollStats_t{c.calls.get(), c.failed.get(), bytes, double(c.ticks.get()) * secondsPerTick,
                                    double(c.waitUs.get()) * 1e-6,
                                    double(bytes) * busFactor(strataStatColl_t(i), nranks_)};
    });
  }
  for (int i = 0; i < strataNumTransports; ++i) {
    const TransportTotals& x = transport_[i];
    whole &= x.lock.read([&] {
      t.transport[i] = strataTransportStats_t{x.links.load(std::memory_order_relaxed), x.bytesSent.get(),
                                              x.bytesReceived.get(), double(x.ticks.get()) * secondsPerTick};
    });
  }
  return whole;
}

void CommStats::publishSnapshot() {
  const uint64_t wanted = snapshotsWanted_.load(std::memory_order_relaxed);
  strataStats_t t{};
  readLive(t, 1);  // the writer's own copy: nothing overtakes it
  uint64_t words[kSnapshotWords] = {};
  std::memcpy(words, &t, sizeof t);
  snapshotLock_.beginWrite();
  for (size_t i = 0; i < kSnapshotWords; ++i) snapshot_[i].store(words[i], std::memory_order_relaxed);
  snapshotLock_.endWrite();
  snapshotsServed_.store(wanted, std::memory_order_release);
}

bool CommStats::readSnapshot(strataStats_t& t) const {
  uint64_t words[kSnapshotWords];
  if (!snapshotLock_.read([&] {
        for (size_t i = 0; i < kSnapshotWords; ++i) words[i] = snapshot_[i].load(std::memory_order_relaxed);
      }))
    return false;
  std::memcpy(&t, words, sizeof t);
  return true;
}

void CommStats::linkOpened(unsigned transport) {
  if (transport < strataNumTransports) transport_[transport].links.fetch_add(1, std::memory_order_relaxed);
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
