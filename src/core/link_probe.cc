#include "core/link_probe.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <thread>
#include <vector>

#include "algo/cost_model.h"
#include "algo/select.h"
#include "core/comm.h"
#include "core/error.h"
#include "exec/executor.h"

namespace strata {

namespace {

double probeClockUs() {
  using namespace std::chrono;
  return double(duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count()) / 1e3;
}

void sendTo(Comm& c, int peer, std::vector<uint8_t>& buf) {
  std::vector<P2POp> ops{P2POp{true, peer, buf.data(), nullptr, buf.size(), strataUint8}};
  executePlan(c, buildP2PPlan(ops, c.rank(), c.nranks()), Buffers{nullptr, nullptr, &ops});
}

void recvFrom(Comm& c, int peer, std::vector<uint8_t>& buf) {
  std::vector<P2POp> ops{P2POp{false, peer, nullptr, buf.data(), buf.size(), strataUint8}};
  executePlan(c, buildP2PPlan(ops, c.rank(), c.nranks()), Buffers{nullptr, nullptr, &ops});
}

// One warm-up exchange of 8 bytes with `peer` (a send and a receive in one
// group): connects the pair before anything is timed.
void warmUpExchange(Comm& c, int peer) {
  std::vector<uint8_t> out(8, 0x5a), in(8, 0);
  std::vector<P2POp> ops{P2POp{true, peer, out.data(), nullptr, 8, strataUint8},
                         P2POp{false, peer, nullptr, in.data(), 8, strataUint8}};
  Plan plan = buildP2PPlan(ops, c.rank(), c.nranks());
  for (int i = 0; i < 5; ++i) executePlan(c, plan, Buffers{nullptr, nullptr, &ops});
}

// Round trips of `bytes` out and 8 bytes back, seen from the initiator, which
// first waits `quietUs` before each (the link idle); sorted.
std::vector<double> roundTripsUs(Comm& c, int peer, bool initiator, size_t bytes, int reps, int quietUs) {
  std::vector<uint8_t> big(bytes, 0x5a), small(8, 0);
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    if (initiator && quietUs > 0) std::this_thread::sleep_for(std::chrono::microseconds(quietUs));
    double t0 = probeClockUs();
    if (initiator) {
      sendTo(c, peer, big);
      recvFrom(c, peer, small);
    } else {
      recvFrom(c, peer, big);
      sendTo(c, peer, small);
    }
    times.push_back(probeClockUs() - t0);
  }
  std::sort(times.begin(), times.end());
  return times;
}

// The fastest of them, each after `quietUs` of quiet (0: back to back).
double fastestRoundTripUs(Comm& c, int peer, bool initiator, size_t bytes, int reps, int quietUs) {
  return roundTripsUs(c, peer, initiator, bytes, reps, quietUs).front();
}

// Sums `n` doubles over all ranks with the named algorithm (forced: the cost
// model is not ready yet).
void allReduceWith(Comm& c, const char* algo, const double* in, double* out, size_t n) {
  Config cfg = c.config();
  cfg.algo = algo;
  CollArgs args;
  args.coll = Coll::kAllReduce;
  args.rank = c.rank();
  args.nranks = c.nranks();
  args.count = n;
  args.dtype = strataFloat64;
  args.redop = strataSum;
  args.topo = &c.topology();
  OpDesc d;
  d.coll = Coll::kAllReduce;
  d.dtype = strataFloat64;
  d.redop = strataSum;
  d.count = n;
  d.seq = c.nextSeq();
  executePlan(c, buildCollectivePlan(args, d, cfg), Buffers{in, out, nullptr});
}

// Also serves as a barrier between the probe's stages.
void sumAcrossRanks(Comm& c, const double* in, double* out, size_t n) {
  allReduceWith(c, "recursive_doubling", in, out, n);
}

// The model's prediction for an 8-byte all-reduce with `algo` as a linear
// function of the network's alpha and gap: base + perAlpha * alpha + perGap * gap.
struct LatencySensitivity {
  double base, perAlpha, perGap;
};

LatencySensitivity sensitivity(const char* algo, const Topology& t, size_t chunk) {
  Topology m = t;
  auto at = [&](double alpha, double gap) {
    m.inter.alphaUs = alpha;
    m.inter.gapUs = gap;
    return predictUs(algo, Coll::kAllReduce, 8, m, chunk);
  };
  double base = at(0, 0);
  return {base, at(1, 0) - base, at(0, 1) - base};
}

// The share of the steps' latency that the network hides behind their bytes
// (LinkParams::latencyHidden). A link that refunds idle time (a token bucket
// with a deep burst, as tbf shapes the namespace clusters' links) sends a
// message that follows a pause faster than its rate: rank `a` sends `b` a
// message worth ten latencies of the link after 20 ms of quiet, three times,
// and the fastest counts (noise only adds time: in one of 32 launches on the
// namespace clusters the median of three saw no burst where every other
// launch saw the whole). The bytes that beat the rate are the burst the link
// keeps; a burst of a latency's worth of bytes or more hides every latency
// between steps. A NIC keeps none: a quarter of the message or less is taken
// for timing noise.
double probeLatencyHidden(Comm& c, const LinkParams& inter, int a, int b) {
  double hidden[1] = {0}, shared = 0;
  const double bytesPerUs = inter.gbps * 1e3, latencyBytes = inter.alphaUs * bytesPerUs;
  const size_t bytes = std::clamp(size_t(10 * latencyBytes), size_t(64) << 10, size_t(16) << 20);
  if (c.rank() == a || c.rank() == b) {
    const double rtt = fastestRoundTripUs(c, c.rank() == a ? b : a, c.rank() == a, bytes, 3, 20000);
    const double burst = double(bytes) - std::max(0.0, rtt - 2 * inter.alphaUs) * bytesPerUs;
    if (c.rank() == a && burst > 0.25 * double(bytes))
      hidden[0] = std::min(1.0, burst / std::max(1.0, latencyBytes));
  }
  sumAcrossRanks(c, hidden, &shared, 1);
  return shared;
}

}  // namespace

LinkParams defaultIntraLink(const Config& config) {
  if (config.transport == "tcp") return LinkParams{10.0, 3.0, "default (tcp loopback)"};
  return LinkParams{1.5, 8.0, "default (shm)"};
}

LinkParams defaultInterLink(const HostHardware& host) {
  double gbps = 0;
  for (const Nic& n : host.nics)
    if (n.gbps > 0) gbps = gbps == 0 ? n.gbps : std::min(gbps, n.gbps);
  if (gbps == 0) return LinkParams{25.0, 1.25, "default (10 Gbit/s assumed)"};
  return LinkParams{25.0, gbps, "default (NIC speed)"};
}

LinkParams parseLinkParams(const std::string& text, const char* what) {
  const char* usage = "must be \"alpha_us,GB/s[,gap_us[,latency_hidden]]\"";
  std::vector<double> v;
  const char* p = text.c_str();
  for (;;) {
    char* end = nullptr;
    v.push_back(std::strtod(p, &end));
    if (end == p || (*end != ',' && *end != '\0') || v.size() > 4)
      fail(strataInvalidArgument, "%s='%s' %s, e.g. \"15,12.5\"", what, text.c_str(), usage);
    if (*end == '\0') break;
    p = end + 1;
  }
  LinkParams l;
  l.alphaUs = v[0];
  l.gbps = v.size() > 1 ? v[1] : 0;
  l.gapUs = v.size() > 2 ? v[2] : 0;
  l.latencyHidden = v.size() > 3 ? v[3] : 0;
  if (v.size() < 2 || !(l.alphaUs >= 0) || !(l.gbps > 0) || !(l.gapUs >= 0) ||
      !(l.latencyHidden >= 0 && l.latencyHidden <= 1))
    fail(strataInvalidArgument,
         "%s='%s' %s with alpha >= 0, GB/s > 0, gap >= 0 and latency_hidden from 0 to 1", what, text.c_str(), usage);
  l.source = "configured";
  l.gapKnown = true;  // the user's numbers: a gap left out is none
  return l;
}

// The latency of a hop inside a node with every rank busy, as in a ring step:
// all ranks at once pass 8 bytes to the next rank of their node and take 8
// from the previous one, 60 times in a row (each pass waits for the last), and
// a pass's median time is the hop. Timing a pair alone would miss what
// decides a ring on shared cores: the next rank must be scheduled before it
// can forward. The median over the ranks of nodes with two or more, which
// no one unlucky rank moves: their mean came out at 244.6 us in one of the 20
// automatic communicators of a 4 x 2 namespace-node run (the others 2.7-19.4;
// docs/benchmarks/scale.md), which left the network's latency fitted at
// 0.1 us and an 8-byte all-reduce to recursive doubling (252.1 us against
// hier_leader's 158.2).
double probeIntraNodeLatency(Comm& c) {
  const Topology& t = c.topology();
  const std::vector<int>& mine = t.node(t.nodeOf(c.rank()));
  std::vector<double> mineOnly(size_t(c.nranks()), 0), each(size_t(c.nranks()), 0);  // us; 0: not measured
  if (mine.size() > 1) {
    const size_t at = size_t(std::find(mine.begin(), mine.end(), c.rank()) - mine.begin());
    const int next = mine[(at + 1) % mine.size()], prev = mine[(at + mine.size() - 1) % mine.size()];
    std::vector<uint8_t> out(8, 0x5a), in(8, 0);
    std::vector<P2POp> ops{P2POp{true, next, out.data(), nullptr, 8, strataUint8},
                           P2POp{false, prev, nullptr, in.data(), 8, strataUint8}};
    Plan plan = buildP2PPlan(ops, c.rank(), c.nranks());
    std::vector<double> times;
    for (int i = 0; i < 65; ++i) {
      double t0 = probeClockUs();
      executePlan(c, plan, Buffers{nullptr, nullptr, &ops});
      if (i >= 5) times.push_back(probeClockUs() - t0);
    }
    std::sort(times.begin(), times.end());
    mineOnly[size_t(c.rank())] = std::max(times[times.size() / 2], 1e-3);
  }
  sumAcrossRanks(c, mineOnly.data(), each.data(), each.size());
  each.erase(std::remove(each.begin(), each.end(), 0.0), each.end());
  if (each.empty()) return 0;
  std::sort(each.begin(), each.end());
  const size_t m = each.size() / 2;
  return each.size() % 2 ? each[m] : (each[m - 1] + each[m]) / 2;
}

// Latency and gap are fitted to two 8-byte all-reduces over every rank, timed
// alternately so that both see the same conditions (other ranks busy or idle,
// cores shared or not): recursive doubling, whose inter-node steps send from
// all ranks of a node at once, and the leader algorithm, which sends one
// message per node. Each time is linear in (alpha, gap) through the model;
// two shapes give two equations. Timing a pair of ranks alone would not do:
// while two ranks exchange, the others wait, and on shared cores that skews
// the latency several-fold from one launch to the next. Each time is the
// median of 30 batches, a batch 8 calls back to back timed together, as a
// collective runs in a training step or a benchmark's loop. Single calls
// would not do on shared cores either: a call's time there depends on whether
// the ranks happened to start it in step, and their median followed the mix
// a probe caught. On the 4 x 2 namespace nodes (8 ranks on 2 cores) single
// calls' medians (240 of each) fitted alpha 48-156 us and gap -68-189 in 15
// communicators of 5 launches (above the latency or below zero, the gap was
// dropped: 0), and a 4 KiB all-to-all's choice followed it; batches of the
// same calls fitted alpha 89-132 and gap 30-78, about what the benchmark's
// loops of 100 put the two shapes at (recursive doubling 322, the leader
// algorithm 193 us: alpha 86, gap 70). 240 calls of each at init (about
// 0.2 s there, a few ms on a real network).
constexpr int kProbeBatches = 30;
constexpr int kCallsPerBatch = 8;

LinkParams probeInterNodeLink(Comm& c) {
  const Topology& t = c.topology();
  const int a = t.node(0)[0], b = t.node(1)[0];
  if (c.rank() == a) warmUpExchange(c, b);
  if (c.rank() == b) warmUpExchange(c, a);

  const size_t chunk = c.config().chunkBytes;
  const char* shapes[2] = {"recursive_doubling", "hier_leader"};
  std::vector<double> times[2];
  double in = 1, out = 0;
  for (int s = 0; s < 2; ++s)  // the plans built and the pairs connected before anything is timed
    for (int i = 0; i < 5; ++i) allReduceWith(c, shapes[s], &in, &out, 1);
  for (int i = 0; i < kProbeBatches; ++i)
    for (int s = 0; s < 2; ++s) {
      double t0 = probeClockUs();
      for (int k = 0; k < kCallsPerBatch; ++k) allReduceWith(c, shapes[s], &in, &out, 1);
      times[s].push_back((probeClockUs() - t0) / kCallsPerBatch);
    }
  double fit[3] = {0, 0, 0};  // alpha, gap, whether the gap was fitted: rank a's, shared below
  if (c.rank() == a) {
    LatencySensitivity m[2];
    double rhs[2];
    for (int s = 0; s < 2; ++s) {
      std::sort(times[s].begin(), times[s].end());
      m[s] = sensitivity(shapes[s], t, chunk);
      rhs[s] = times[s][times[s].size() / 2] - m[s].base;
    }
    double det = m[0].perAlpha * m[1].perGap - m[1].perAlpha * m[0].perGap;
    double alpha = -1, gap = -1;
    if (std::abs(det) > 1e-9) {
      alpha = (rhs[0] * m[1].perGap - rhs[1] * m[0].perGap) / det;
      gap = (m[0].perAlpha * rhs[1] - m[1].perAlpha * rhs[0]) / det;
    }
    // One node-wide message per step, or noise: latency alone. A gap above the
    // latency is noise too (a message's injection overhead is part of its
    // latency on any network); taken at face value it made a flat ring, one
    // message per node a step, look 2-3x faster than it ran on 4 x 2 nodes.
    const bool fitted = alpha > 0 && gap >= 0 && gap <= alpha;
    if (!fitted) {
      gap = 0;
      alpha = (rhs[0] + rhs[1]) / (m[0].perAlpha + m[1].perAlpha);
    }
    fit[0] = std::max(alpha, 0.1);
    fit[1] = gap;
    fit[2] = fitted ? 1 : 0;
  }
  double shared[3] = {0, 0, 0};
  sumAcrossRanks(c, fit, shared, 3);

  // Bandwidth: a 2 MiB transfer between the first ranks of nodes 0 and 1,
  // the fastest of five back to back (noise only adds time: on 8 namespace
  // nodes x 1-2 ranks on 2 cores the median of three put a 200 Mbit/s link at
  // 18-23 MB/s in 6 of 32 launches, and the model's 1-64 MiB predictions up to
  // 22% over the times measured; back to back, the link's burst refunds
  // only the latency between them).
  double gbps[1] = {0}, sharedGbps = 0;
  if (c.rank() == a || c.rank() == b) {
    const size_t bulk = 2 << 20;
    double large = fastestRoundTripUs(c, c.rank() == a ? b : a, c.rank() == a, bulk, 5, 0);
    if (c.rank() == a) gbps[0] = double(bulk) / std::max(1.0, large - 2 * shared[0]) / 1e3;
  }
  sumAcrossRanks(c, gbps, &sharedGbps, 1);
  LinkParams l{shared[0], sharedGbps, "measured"};
  l.gapUs = shared[1];
  l.gapKnown = shared[2] > 0;
  l.latencyHidden = probeLatencyHidden(c, l, a, b);
  return l;
}

}  // namespace strata
