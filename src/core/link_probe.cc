#include "core/link_probe.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <vector>

#include "algo/select.h"
#include "core/comm.h"
#include "core/error.h"
#include "exec/executor.h"

namespace strata {

namespace {

double nowUs() {
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
    double t0 = nowUs();
    executePlan(c, plan, Buffers{nullptr, nullptr, &ops});
    times.push_back(nowUs() - t0);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// Median round trip of `bytes` out and 8 bytes back, seen from the initiator.
double roundTripUs(Comm& c, int peer, bool initiator, size_t bytes, int reps) {
  std::vector<uint8_t> big(bytes, 0x5a), small(8, 0);
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    double t0 = nowUs();
    if (initiator) {
      sendTo(c, peer, big);
      recvFrom(c, peer, small);
    } else {
      recvFrom(c, peer, big);
      sendTo(c, peer, small);
    }
    times.push_back(nowUs() - t0);
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
  double ignored = 0, none = 0;
  sumAcrossRanks(c, &none, &ignored, 1);  // the other pairs start only now
  // The gap: the same exchange, now from every rank of node 0 to its
  // counterpart on node 1 at once; rank a's slowdown per extra message.
  const int pairs = int(std::min(t.node(0).size(), t.node(1).size()));
  const int local = t.place(c.rank()).local;
  if (pairs > 1 && local < pairs && t.nodeOf(c.rank()) <= 1) {
    const bool initiator = t.nodeOf(c.rank()) == 0;
    const int peer = t.node(initiator ? 1 : 0)[size_t(local)];
    exchangeUs(c, peer, 5);
    double together = exchangeUs(c, peer, 15);
    if (c.rank() == a) result[2] = std::max(0.0, (together - result[0]) / (pairs - 1));
  }
  double shared[3] = {0, 0, 0};
  sumAcrossRanks(c, result, shared, 3);  // rank a's numbers to all (only it contributes)
  LinkParams l{shared[0], shared[1], "measured"};
  l.gapUs = shared[2];
  return l;
}

}  // namespace strata
