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
    fail(strataInvalidArgument, "%s='%s' must be \"alpha_us,GB/s\", e.g. \"15,12.5\"", what, text.c_str());
  const char* rest = end + 1;
  l.gbps = std::strtod(rest, &end);
  if (end == rest || *end != '\0' || !(l.alphaUs >= 0) || !(l.gbps > 0))
    fail(strataInvalidArgument, "%s='%s' must be \"alpha_us,GB/s\" with alpha >= 0 and GB/s > 0", what,
         text.c_str());
  l.source = "configured";
  return l;
}

LinkParams probeInterNodeLink(Comm& c) {
  const Topology& t = c.topology();
  const int a = t.node(0)[0], b = t.node(1)[0];
  double result[2] = {0, 0};  // alpha us, GB/s: measured on rank a, zero elsewhere
  if (c.rank() == a || c.rank() == b) {
    const bool initiator = c.rank() == a;
    const int peer = initiator ? b : a;
    const size_t bulk = 2 << 20;
    roundTripUs(c, peer, initiator, 8, 3);  // connect and warm up
    double small = roundTripUs(c, peer, initiator, 8, 9);
    double large = roundTripUs(c, peer, initiator, bulk, 3);
    if (initiator) {
      result[0] = small / 2;
      result[1] = double(bulk) / std::max(1.0, large - small) / 1e3;
    }
  }
  // Share rank a's numbers: a sum in which only rank a contributes.
  Config cfg = c.config();
  cfg.algo = "recursive_doubling";
  CollArgs args;
  args.coll = Coll::kAllReduce;
  args.rank = c.rank();
  args.nranks = c.nranks();
  args.count = 2;
  args.dtype = strataFloat64;
  args.redop = strataSum;
  OpDesc d;
  d.coll = Coll::kAllReduce;
  d.dtype = strataFloat64;
  d.redop = strataSum;
  d.count = 2;
  d.seq = c.nextSeq();
  double shared[2] = {0, 0};
  executePlan(c, buildCollectivePlan(args, d, cfg), Buffers{result, shared, nullptr});
  return LinkParams{shared[0], shared[1], "measured"};
}

}  // namespace strata
