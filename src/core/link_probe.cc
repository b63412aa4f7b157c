#include "core/link_probe.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
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

// Median time of `reps` exchanges of 8 bytes with `peer` (a send and a
// receive in one group, as a collective's step does): one step's latency.
double exchangeUs(Comm& c, int peer, int reps) {
  std::vector<uint8_t> out(8, 0x5a), in(8, 0);
  std::vector<P2POp> ops{P2POp{true, peer, out.data(), nullptr, 8, strataUint8},
                         P2POp{false, peer, nullptr, in.data(), 8, strataUint8}};
  Plan plan = buildP2PPlan(ops, c.rank(), c.nranks());
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    double t0 = probeClockUs();
    executePlan(c, plan, Buffers{nullptr, nullptr, &ops});
    times.push_back(probeClockUs() - t0);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// Median round trip of `bytes` out and 8 bytes back, seen from the initiator.
double roundTripUs(Comm& c, int peer, bool initiator, size_t bytes, int reps) {
  std::vector<uint8_t> big(bytes, 0x5a), small(8, 0);
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
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
  return times[times.size() / 2];
}

// Sums `n` doubles over all ranks with a fixed flat algorithm (the cost model
// is not ready yet); also serves as a barrier between the probe's stages.
void sumAcrossRanks(Comm& c, const double* in, double* out, size_t n) {
  Config cfg = c.config();
  cfg.algo = "recursive_doubling";
  CollArgs args;
  args.coll = Coll::kAllReduce;
  args.rank = c.rank();
  args.nranks = c.nranks();
  args.count = n;
  args.dtype = strataFloat64;
  args.redop = strataSum;
  OpDesc d;
  d.coll = Coll::kAllReduce;
  d.dtype = strataFloat64;
  d.redop = strataSum;
  d.count = n;
  d.seq = c.nextSeq();
  executePlan(c, buildCollectivePlan(args, d, cfg), Buffers{in, out, nullptr});
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
  char* end = nullptr;
  LinkParams l;
  l.alphaUs = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != ',')
    fail(strataInvalidArgument, "%s='%s' must be \"alpha_us,GB/s[,gap_us]\", e.g. \"15,12.5\"", what,
         text.c_str());
  const char* rest = end + 1;
  l.gbps = std::strtod(rest, &end);
  if (end != rest && *end == ',') {
    rest = end + 1;
    l.gapUs = std::strtod(rest, &end);
    if (end == rest || !(l.gapUs >= 0)) end = const_cast<char*>(rest);  // reported below
  }
  if (end == rest || *end != '\0' || !(l.alphaUs >= 0) || !(l.gbps > 0))
    fail(strataInvalidArgument, "%s='%s' must be \"alpha_us,GB/s[,gap_us]\" with alpha >= 0, GB/s > 0, gap >= 0",
         what, text.c_str());
  l.source = "configured";
  return l;
}

LinkParams probeInterNodeLink(Comm& c) {
  const Topology& t = c.topology();
  const int a = t.node(0)[0], b = t.node(1)[0];
  double result[3] = {0, 0, 0};  // alpha us, GB/s, gap us: measured on rank a, zero elsewhere
  if (c.rank() == a || c.rank() == b) {
    const bool initiator = c.rank() == a;
    const int peer = initiator ? b : a;
    const size_t bulk = 2 << 20;
    exchangeUs(c, peer, 5);  // connect and warm up
    double alpha = exchangeUs(c, peer, 15);
    double large = roundTripUs(c, peer, initiator, bulk, 3);
    if (initiator) {
      result[0] = alpha;
      result[1] = double(bulk) / std::max(1.0, large - 2 * alpha) / 1e3;
    }
  }
  double shared[3] = {0, 0, 0};
  sumAcrossRanks(c, result, shared, 3);  // rank a's numbers to all (only it contributes)
  LinkParams l{shared[0], shared[1], "measured"};
  // The gap: what concurrent messages from one node cost beyond alpha (NIC
  // message rate, or CPU when ranks outnumber cores). Time an 8-byte
  // recursive-doubling all-reduce over every rank (its inter-node steps send
  // from all ranks of a node at once) and attribute what exceeds the model's
  // gap-free prediction to the gap, through the model's own sensitivity.
  Topology model = t;
  model.inter = l;
  const double pred0 = predictUs("recursive_doubling", Coll::kAllReduce, 8, model, c.config().chunkBytes);
  model.inter.gapUs = 1;
  const double perGap = predictUs("recursive_doubling", Coll::kAllReduce, 8, model, c.config().chunkBytes) - pred0;
  if (perGap > 0) {
    double in = 1, out = 0;
    std::vector<double> times;
    for (int i = 0; i < 25; ++i) {
      double t0 = probeClockUs();
      sumAcrossRanks(c, &in, &out, 1);
      if (i >= 5) times.push_back(probeClockUs() - t0);
    }
    std::sort(times.begin(), times.end());
    double gap[1] = {c.rank() == a ? std::max(0.0, (times[times.size() / 2] - pred0) / perGap) : 0.0}, g = 0;
    sumAcrossRanks(c, gap, &g, 1);
    l.gapUs = g;
  }
  return l;
}

}  // namespace strata
