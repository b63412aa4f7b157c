// The cost model's building blocks (cost_steps.h says what they are).
#include "algo/cost_steps.h"

#include <algorithm>
#include <cmath>

#include "algo/algorithms.h"
#include "algo/log_blocks.h"

namespace strata::cost {

// Microseconds per byte of each of `streams` transfers that leave (or enter)
// a node at once: they share its bandwidth, and each runs on one rail, so
// fewer transfers than rails leave the other rails idle.
double interStreamUsPerByte(const Topology& t, double streams) {
  return std::max(streams, double(t.inter.rails)) / (t.inter.gbps * 1e3);
}

std::vector<HopCost> hopCosts(const Topology& t, const std::vector<std::pair<int, int>>& pairs) {
  std::vector<int> out(size_t(t.nnodes()), 0), in(size_t(t.nnodes()), 0);
  for (auto [a, b] : pairs)
    if (t.nodeOf(a) != t.nodeOf(b)) {
      out[size_t(t.nodeOf(a))]++;
      in[size_t(t.nodeOf(b))]++;
    }
  std::vector<HopCost> costs;
  for (auto [a, b] : pairs) {
    if (t.nodeOf(a) == t.nodeOf(b)) {
      costs.push_back({t.intra.alphaUs, 1 / (t.intra.gbps * 1e3)});
    } else {
      int share = std::max(out[size_t(t.nodeOf(a))], in[size_t(t.nodeOf(b))]);
      costs.push_back({t.inter.alphaUs + (share - 1) * t.inter.gapUs, interStreamUsPerByte(t, share)});
    }
  }
  return costs;
}

// A set of transfers that happen at once (one step): (from, to) pairs each
// moving `bytes`. Its time is the slowest transfer.
double stepUs(const Topology& t, const std::vector<std::pair<int, int>>& pairs, double bytes) {
  double worst = 0;
  for (const HopCost& c : hopCosts(t, pairs)) worst = std::max(worst, c.us(bytes));
  return worst;
}

// A ring over `order` in which every member sends `bytes` to the next, `steps` times.
double ringUs(const Topology& t, const std::vector<int>& order, double bytes, double steps) {
  std::vector<std::pair<int, int>> pairs;
  for (size_t i = 0; i < order.size(); ++i) pairs.emplace_back(order[i], order[(i + 1) % order.size()]);
  return order.size() < 2 ? 0 : steps * stepUs(t, pairs, bytes);
}

std::vector<int> identity(int n) {
  std::vector<int> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[size_t(i)] = i;
  return v;
}

// A pipelined chain over `order`. Every rank forwards each fragment as it
// arrives (cut-through) and its sends complete into the next link's buffer,
// so slices stream back to back: the first fragment crosses every hop (one
// latency each), the rest of the bytes follow at the slowest hop's rate with
// every hop busy at once. (Charging a latency per slice and hop, as this did
// before, put the chain at 1.3-2.4x strata-sim's replay of its plan from
// 1 MiB on 8 x 8 ranks at 15 us / 50 GB/s.)
double chainUs(const Topology& t, const std::vector<int>& order, double bytes, size_t chunk) {
  if (order.size() < 2) return 0;
  const double slice = bytes / double(sliceCount(size_t(bytes), chunk));
  const double fragment = std::min(slice, double(kMaxFragment));
  std::vector<std::pair<int, int>> all;
  for (size_t i = 0; i + 1 < order.size(); ++i) all.emplace_back(order[i], order[i + 1]);
  double first = 0, slowest = 0;
  for (auto pr : all) first += hopCosts(t, {pr})[0].us(fragment);
  for (const HopCost& c : hopCosts(t, all)) slowest = std::max(slowest, c.usPerByte);  // all hops busy at once
  return first + (bytes - fragment) * slowest;
}

// The latency of a chain of `steps` hops around a ring whose hops take
// `hopUs` (hop i: order[i] to order[i+1]): a rank forwards a block only after
// it arrived, so a block's path crosses consecutive hops, each at its own
// latency, and the slowest of the n such paths decides (whole laps plus the
// costliest run of the remaining hops).
double ringPathUs(const std::vector<double>& hopUs, double steps) {
  const size_t n = hopUs.size();
  double lap = 0;
  for (double h : hopUs) lap += h;
  const double laps = std::floor(steps / double(n));
  const size_t rest = size_t(std::lround(steps - laps * double(n)));
  double window = 0, worst = 0;
  for (size_t i = 0; i < rest; ++i) window += hopUs[i];
  worst = window;
  for (size_t start = 1; start < n && rest > 0; ++start) {
    window += hopUs[(start + rest - 1) % n] - hopUs[start - 1];
    worst = std::max(worst, window);
  }
  return laps * lap + worst;
}

// A ring over `order` as the ring plans run it (all_reduce/ring.cc,
// reduce_scatter/ring.cc, all_gather/ring.cc): `slices` slices one after the
// other; in each, every member's block of `blockBytes` travels `steps` hops,
// forwarded fragment by fragment as it arrives while the blocks behind it
// stream on (a send completes into the next link's buffer). A slice takes the
// longer of its latency path (every hop on the way at its own latency with a
// fragment, then the rest of a block) and the busiest hop's bandwidth (`steps`
// blocks back to back after one latency). A rank starts a slice only when it
// has finished the last, so each slice pays its latency path (strata-sim's
// replay agrees within 1% on 4 x 1 nodes at 256 MiB). The path charges each
// hop its own latency, as the replay does: on 8 x 8 ranks at 2 us inside a
// node and 15 us between nodes, charging every step the slowest hop put the
// ring at 3-4x the replay. On shared cores a hop inside a node is slow too
// (the next rank must be scheduled), which the link probe measures at init
// with every rank busy (probeIntraNodeLatency).
double pipelinedRingUs(const Topology& t, const std::vector<int>& order, double blockBytes, double steps,
                       double slices) {
  const size_t n = order.size();
  if (n < 2) return 0;
  std::vector<std::pair<int, int>> pairs;
  for (size_t i = 0; i < n; ++i) pairs.emplace_back(order[i], order[(i + 1) % n]);
  const double fragment = std::min(blockBytes, double(kMaxFragment));
  double slowestPerByte = 0, worstFixed = 0;
  std::vector<double> hopUs;
  for (const HopCost& c : hopCosts(t, pairs)) {
    hopUs.push_back(c.us(fragment));
    slowestPerByte = std::max(slowestPerByte, c.usPerByte);
    worstFixed = std::max(worstFixed, c.fixedUs);
  }
  const double path = ringPathUs(hopUs, steps) + (blockBytes - fragment) * slowestPerByte;
  const double bandwidth = worstFixed + steps * blockBytes * slowestPerByte;
  return slices * std::max(path, bandwidth);
}

// Reducing a whole message of `bytes` at once, after it arrived (not
// overlapped with the transfer, as a pipelined ring's slices are): two
// inputs read, one output written.
double localReduceUs(const Topology& t, double bytes) { return 3 * bytes / (t.memoryGbps * 1e3); }
double localCopyUs(const Topology& t, double bytes) { return 2 * bytes / (t.memoryGbps * 1e3); }

// Recursive doubling over `team` (global ranks), as buildRecursiveDoublingAllReduce does it:
// every exchange, in slices (exchangeSlices), is followed by a reduction of the whole message.
double recursiveDoublingUs(const Topology& t, const std::vector<int>& team, double bytes) {
  const int n = int(team.size());
  if (n < 2) return 0;
  const double slices = double(exchangeSlices(&t, size_t(bytes), 1));
  int p = 1;
  while (p * 2 <= n) p *= 2;
  const int rem = n - p;
  double us = 0;
  std::vector<std::pair<int, int>> fold;
  for (int r = 0; r < 2 * rem; r += 2) fold.emplace_back(team[size_t(r)], team[size_t(r + 1)]);
  if (rem > 0) us += 2 * stepUs(t, fold, bytes) + localReduceUs(t, bytes);
  for (int m = 1; m < p; m <<= 1) {
    std::vector<std::pair<int, int>> pairs;
    for (int v = 0; v < p; ++v) {
      int pv = v ^ m;
      int a = v < rem ? v * 2 + 1 : v + rem, b = pv < rem ? pv * 2 + 1 : pv + rem;
      pairs.emplace_back(team[size_t(a)], team[size_t(b)]);
    }
    us += slices * stepUs(t, pairs, bytes / slices) + localReduceUs(t, bytes);
  }
  return us;
}

// A binomial tree from team[root] (broadcast; a reduce is the same rounds
// reversed, each level also reducing the whole message: `reduces`).
double treeUs(const Topology& t, const std::vector<int>& team, int root, double bytes, bool reduces) {
  const int n = int(team.size());
  double us = 0;
  int top = 1;
  while (top < n) top <<= 1;
  for (int m = top >> 1; m > 0; m >>= 1) {
    std::vector<std::pair<int, int>> pairs;
    for (int v = 0; v + m < n; v += 2 * m)
      pairs.emplace_back(team[size_t((v + root) % n)], team[size_t((v + m + root) % n)]);
    us += stepUs(t, pairs, bytes) + (reduces ? localReduceUs(t, bytes) : 0);
  }
  return us;
}

}  // namespace strata::cost
