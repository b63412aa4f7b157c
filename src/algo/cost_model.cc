#include "algo/cost_model.h"

#include <algorithm>
#include <cmath>

#include "algo/algorithms.h"
#include "algo/cost_steps.h"
#include "algo/hierarchical/node_fanout.h"
#include "algo/hierarchical/teams.h"
#include "algo/log_blocks.h"
#include "algo/radix_blocks.h"
#include "algo/ring_blocks.h"
#include "core/error.h"

namespace strata {

using namespace cost;

namespace {

std::vector<int> nodeOrder(const Topology& t, int root) {
  std::vector<int> order{root};
  for (int i = 0; i < t.nnodes(); ++i)
    for (int r : t.node((t.nodeOf(root) + i) % t.nnodes()))
      if (r != root) order.push_back(r);
  return order;
}

std::vector<int> leaders(const Topology& t, int root) {
  std::vector<int> l;
  for (int m = 0; m < t.nnodes(); ++m) l.push_back(m == t.nodeOf(root) ? root : t.node(m)[0]);
  return l;
}

// The inter-node stage of the hierarchical rings: every carried column's
// ring across nodes, one phase of a step moving `bytesPerStep`, all of a
// node's ranks streaming at once and sharing its link; the busiest node's.
// `columns`: how many columns the data is cut into (K, the most ranks on a
// node, unless a plan takes fewer).
double interColumnsPhaseUs(const Topology& t, double bytesPerStep, double columns) {
  if (t.nnodes() < 2) return 0;
  double worst = 0;
  for (int m = 0; m < t.nnodes(); ++m) {
    const double l = double(t.node(m).size());
    const double carried = std::ceil(columns / l);
    const double streams = std::min<double>(l, columns);
    double step = t.inter.alphaUs + (streams - 1) * t.inter.gapUs + bytesPerStep * interStreamUsPerByte(t, streams);
    worst = std::max(worst, carried * step);
  }
  return worst;
}

double interColumnsPhaseUs(const Topology& t, double bytesPerStep) {
  return interColumnsPhaseUs(t, bytesPerStep, t.maxLocal());
}

// `phases` such phases.
double interColumnsUs(const Topology& t, double bytesPerStep, double phases) {
  return phases * interColumnsPhaseUs(t, bytesPerStep);
}

// The phases of an exchange across nodes of every carried column, as the
// hierarchical plans take them: `count` phases that each take `us` on the
// network (the busiest node's), in each of which a carrier receives
// `received` bytes (what node_fanout.h sends on inside its node), of which
// `left` land only as the phase's transfers end: a message lands a fragment
// (the network's packet) at a time, so the last fragment of each partner's,
// all of them at once where several partners send together (a log or radix
// step's sends are tapered, Flow::tapered: their last is at most
// kTailFragment; a ring's forwards are not).
// `pipelined`: a ring's phases, whose data is on its way during the phase
// before (forwarded as it lands), so a phase's latency is behind it when it
// starts.
struct AcrossPhase {
  double us = 0, received = 0, count = 0, left = 0;
  bool pipelined = false;
  // A reduce-scatter: the bytes of the carrier's partial sums the phase
  // reads for the first time, which node_fanin.h sums from the node first.
  double firstRead = 0;
};
using AcrossPhases = std::vector<AcrossPhase>;

double totalUs(const AcrossPhases& phases) {
  double us = 0;
  for (const AcrossPhase& p : phases) us += p.count * p.us;
  return us;
}

// The hierarchical all-gather with its node's fan-out beside the exchange
// across nodes (algo/hierarchical/node_fanout.h), blocks of `ownBytes`: a
// carrier sends what it received in a phase on to the node's L-1 other ranks
// in the next (its own block in the first), through its link into the node
// (split duplex: each rank also receives L-1 such streams), so a phase takes
// the longer of its exchange and that; the last phase sends on what lands as
// it lands, so it takes the longer of the exchange followed by sending on
// what landed last, and the whole fan-out after the first fragment came in.
double fannedOutUs(const Topology& t, const AcrossPhases& phases, double ownBytes) {
  const double others = t.maxLocal() - 1, usPerByte = 1 / (t.intra.gbps * 1e3);
  size_t lastGroup = phases.size();
  for (size_t i = 0; i < phases.size(); ++i)
    if (phases[i].count > 0) lastGroup = i;
  double us = 0, before = ownBytes;  // sent on at the next phase's start
  for (size_t i = 0; i < phases.size(); ++i) {
    const AcrossPhase& p = phases[i];
    if (p.count <= 0) continue;
    auto sendingOnUs = [&](double bytes) { return std::max(p.us, t.intra.alphaUs + others * bytes * usPerByte); };
    const bool endsAll = i == lastGroup;
    const double plain = p.count - (endsAll ? 1 : 0);
    if (plain > 0) {
      us += sendingOnUs(before) + (plain - 1) * sendingOnUs(p.received);
      before = p.received;
    }
    if (endsAll) {
      // (In a ring the data comes in phase after phase, each a latency after the last.)
      const double tail = t.intra.alphaUs + others * p.left * usPerByte;
      const double fan = (p.pipelined ? 0 : t.inter.alphaUs) + t.intra.alphaUs +
                         others * (before + p.received) * usPerByte;
      us += std::max(p.us + tail, fan);
    }
    before = p.received;
  }
  return us;
}

// The hierarchical reduce-scatter with its node's fan-in beside the exchange
// across nodes (algo/hierarchical/node_fanin.h): in each phase the node's
// L-1 other ranks send the carrier their contributions to what the phase
// reads first (into its link at once), which it sums one contributor after
// the other as they come; what reads the sums follows the last. A phase takes
// the first fragment's way through that (its latency, the fragments of the
// L-1 coming in together, L-1 reductions; the contributions ramp up, so that
// is a small packet's: Flow::rampsUp), then the longer of the exchange
// and the rest of the contributions; a ring's (`pipelined`) takes the longer
// of its exchange, whose data comes a latency after the last phase's anyway,
// and all of that.
double fannedInUs(const Topology& t, const AcrossPhases& phases) {
  const double others = t.maxLocal() - 1, usPerByte = 1 / (t.intra.gbps * 1e3);
  double us = 0;
  for (const AcrossPhase& p : phases) {
    const double fragment = std::min(p.firstRead, double(rampedFragmentBytes(0)));  // (Flow::rampsUp)
    const double fill =
        p.firstRead > 0 ? t.intra.alphaUs + others * (fragment * usPerByte + localReduceUs(t, fragment)) : 0;
    const double rest = others * (p.firstRead - fragment) * usPerByte;
    us += p.count * (p.pipelined ? std::max(p.us, fill + rest) : fill + std::max(p.us, rest));
  }
  return us;
}

// Marks `blocks` read and returns how many were not read before.
double firstReads(std::vector<bool>& read, const std::vector<int>& blocks) {
  double fresh = 0;
  for (int q : blocks)
    if (!read[size_t(q)]) {
      read[size_t(q)] = true;
      ++fresh;
    }
  return fresh;
}

// The intra-node stage: on each node a ring over its ranks that moves
// `blocks` blocks of `blockBytes` (in rounds of one block per member), each
// cut into the slices of a ring inside a node (nodeRingSliceBytes).
double intraRingsUs(const Topology& t, double blocks, double blockBytes, size_t chunk) {
  const double p = double(sliceCount(size_t(blockBytes), nodeRingSliceBytes(t, chunk)));
  double worst = 0;
  for (int m = 0; m < t.nnodes(); ++m) {
    const double l = double(t.node(m).size());
    worst = std::max(worst, ringUs(t, t.node(m), blockBytes / p, std::ceil(blocks / l) * p * (l - 1)));
  }
  return worst;
}

// Every carried column's ring across nodes: `steps` steps of a block of
// `blockBytes`, each cut into phases of linkPhaseBytes (as the hierarchical
// plans cut them).
AcrossPhases ringColumnsPhases(const Topology& t, double blockBytes, double steps, size_t chunk) {
  const double p = double(sliceCount(size_t(blockBytes), linkPhaseBytes(&t, chunk)));
  const double bytes = blockBytes / p;
  // (A reduce-scatter's phase reads a new block's sums: the one it sends or reduces.)
  return {{interColumnsPhaseUs(t, bytes), bytes, steps * p, std::min(bytes, double(kMaxFragment)), true, bytes}};
}

double ringColumnsUs(const Topology& t, double blockBytes, double steps, size_t chunk) {
  return totalUs(ringColumnsPhases(t, blockBytes, steps, chunk));
}

// Mirrors buildHierRingAllReduce: per outer slice, intra reduce-scatter,
// each column's ring all-reduce across nodes, intra all-gather.
double hierRingAllReduceUs(const Topology& t, double bytes, size_t chunk) {
  const double k = t.maxLocal(), nodes = t.nnodes(), part = bytes / k;
  const double slices = double(hierOuterSlices(t, size_t(part), chunk, t.maxLocal()));
  const double slicePart = part / slices;
  const double inter = ringColumnsUs(t, slicePart / nodes, 2 * (nodes - 1), chunk);
  return slices * (2 * intraRingsUs(t, k, slicePart, chunk) + inter);
}

// A log-step reduce-scatter / all-gather across nodes of every column at
// once, blocks of `blockBytes` per node: each step cut into pipeline slices,
// one phase each (algo/log_blocks.cc), of linkPhaseBytes.
AcrossPhases logColumnsPhases(const Topology& t, double blockBytes, size_t chunk, bool reduceScatter) {
  const size_t slice = linkPhaseBytes(&t, chunk);
  AcrossPhases phases;
  const std::vector<LogStep> steps = reduceScatter ? logReduceScatterSteps(t.nnodes(), 0) : std::vector<LogStep>{};
  std::vector<bool> read(size_t(t.nnodes()), false);
  for (const LogStepShape& sh : logStepShapes(t.nnodes(), reduceScatter)) {
    const double slices = double(sliceCount(size_t(sh.blocks * blockBytes), slice));
    const double bytes = sh.blocks * blockBytes / slices;
    double fresh = 0;
    if (reduceScatter) {
      const LogStep& step = steps[phases.size()];
      fresh = firstReads(read, step.sent) + firstReads(read, step.received);
    }
    phases.push_back({interColumnsPhaseUs(t, bytes), bytes, slices, std::min(bytes, double(tailFragmentFor(1))), false,
                      fresh * blockBytes / slices});
  }
  return phases;
}

double logColumnsUs(const Topology& t, double blockBytes, size_t chunk, bool reduceScatter) {
  return totalUs(logColumnsPhases(t, blockBytes, chunk, reduceScatter));
}

// A radix-k reduce-scatter / all-gather across nodes of every column at once
// (algo/radix_blocks.h), blocks of `blockBytes` per node: in a step each
// carrier sends to its k-1 partners at once, so a node's link carries
// (k-1) x its carriers' streams, each no faster than one rail, all of them no
// faster than the node's bandwidth; each step cut into slices by its largest
// message. A reduce-scatter step reduces the partners' data one partner at a
// time, the first as it arrives, the others from the link's buffer after it.
AcrossPhases radixColumnsPhases(const Topology& t, double blockBytes, size_t chunk, bool reduceScatter, int radix) {
  const int nodes = t.nnodes();
  if (nodes < 2) return {};
  const size_t slice = linkPhaseBytes(&t, chunk);
  AcrossPhases phases;
  std::vector<bool> read(size_t(nodes), false);
  const double maxLocal = t.maxLocal();  // (a walk over the nodes)
  for (const RadixStep& step : reduceScatter ? radixReduceScatterSteps(nodes, 0, radix)
                                             : radixAllGatherSteps(nodes, 0, radix)) {
    const double partners = double(step.sends.size());
    const double largest = double(step.sends[0].blocks.size()) * blockBytes;
    double total = 0;
    for (const RadixTransfer& m : step.sends) total += double(m.blocks.size()) * blockBytes;
    const double slices = double(sliceCount(size_t(largest), slice));
    double worst = 0;
    for (int m = 0; m < nodes; ++m) {
      const double l = double(t.node(m).size());
      const double carried = std::ceil(maxLocal / l);
      const double carriers = std::min<double>(l, maxLocal);
      const double streams = carriers * partners;
      const double bytesUs = std::max(carriers * total / (t.inter.gbps * 1e3),
                                      largest * t.inter.rails / (t.inter.gbps * 1e3));
      const double stepUs = t.inter.alphaUs + (streams - 1) * t.inter.gapUs + bytesUs / slices;
      const double laterReduces = reduceScatter ? (total - largest) / slices : 0;
      worst = std::max(worst, carried * (stepUs + localReduceUs(t, laterReduces)));
    }
    // Each partner's last fragment (tapered to tailFragmentFor the partners)
    // lands as the step's transfers end (they share the links); what landed
    // before went on meanwhile, in pieces taken in turn (node_fanout.h).
    const double tail = double(tailFragmentFor(size_t(partners)));
    const double left = std::min(total, partners * std::min(largest / slices, tail));
    double fresh = 0;  // a reduce-scatter step reads what it sends and what the first partner's data reduces
    if (reduceScatter) {
      for (const RadixTransfer& m : step.sends) fresh += firstReads(read, m.blocks);
      fresh += firstReads(read, step.recvs[0].blocks);
    }
    phases.push_back(
        {worst, total / slices, slices, std::min(total / slices, left), false, fresh * blockBytes / slices});
  }
  return phases;
}

// hier_halving's all-reduce across nodes of each carried part (`part`
// bytes, one outer slice's), every column at once: halving then doubling, a
// log-step reduce-scatter and all-gather of node-count sub-blocks
// (algo/log_blocks.h), each step one phase.
double halvingColumnsUs(const Topology& t, double part, size_t chunk) {
  const double sub = part / t.nnodes();
  return logColumnsUs(t, sub, chunk, true) + logColumnsUs(t, sub, chunk, false);
}

// The same by recursive doubling of the whole part (all_reduce/
// recursive_doubling.cc): floor(log2 N) exchanges of all of it, two steps
// more where N is not a power of two (the extra nodes' carriers fold in and
// get the result back). Half the steps of halving, log2 N times the bytes.
// The data cut into `columns` parts.
double doublingColumnsUs(const Topology& t, double part, double columns) {
  const int n = t.nnodes();
  if (n < 2) return 0;
  int p = 1;
  while (p * 2 <= n) p *= 2;
  const double slices = double(exchangeSlices(&t, size_t(part), 1));
  double us = p < n ? 2 * interColumnsPhaseUs(t, part, columns) + localReduceUs(t, part) : 0;
  for (int m = 1; m < p; m <<= 1)
    us += slices * interColumnsPhaseUs(t, part / slices, columns) + localReduceUs(t, part);
  return us;
}

// hier_halving's all-reduce of `bytes` in one form (HierHalvingAllReduceForm),
// as buildHierHalvingAllReduce builds it: per outer slice (hierOuterSlices) a
// ring inside each node into `columns` parts, each part's all-reduce across
// nodes, a ring back.
double hierHalvingFormUs(const Topology& t, double bytes, size_t chunk, HierHalvingAllReduceForm form) {
  const double part = bytes / form.columns;
  const double slices = double(hierOuterSlices(t, size_t(part), chunk, form.columns));
  const double slicePart = part / slices;
  const double across =
      form.doubles ? doublingColumnsUs(t, slicePart, form.columns) : halvingColumnsUs(t, slicePart, chunk);
  return slices * (2 * intraRingsUs(t, form.columns, slicePart, chunk) + across);
}

// The links `t` has with none of their latency: what a run of steps costs in
// bytes alone.
Topology withoutLatency(const Topology& t) {
  Topology bytesOnly = t;
  bytesOnly.inter.alphaUs = 0;
  bytesOnly.inter.gapUs = 0;
  return bytesOnly;
}

// On a link that hides latency behind bytes (LinkParams::latencyHidden: a
// token bucket refunds the idle time between steps) a sequence of steps
// costs less than its latencies plus its bytes (`lockstep`): the hidden share
// of the smaller of the two goes (all of it: the longer of the two).
double hidingLatency(const Topology& t, double lockstep, double bytesOnly) {
  return lockstep - t.inter.latencyHidden * std::max(0.0, std::min(lockstep - bytesOnly, bytesOnly));
}

// hidingLatency of the time `lockstepOn(topology)` gives on `t` and on `t`
// without its latency (the forms' choosers ask it as the prediction does).
template <class LockstepOn>
double hidingLatencyOf(const Topology& t, LockstepOn&& lockstepOn) {
  const double lockstep = lockstepOn(t);
  if (t.inter.latencyHidden <= 0 || t.nnodes() < 2) return lockstep;
  return hidingLatency(t, lockstep, lockstepOn(withoutLatency(t)));
}

// The intra-node stage of the hierarchical reduce-scatter / all-gather: on
// each node a ring over its ranks in which every column travels as one block
// of `blockBytes` per node that has the column (teams.h: columnRuns; a column
// split into several runs takes as many rounds), cut into the slices of a
// ring inside a node (nodeRingSliceBytes).
double intraColumnRingsUs(const Topology& t, double blockBytes, size_t chunk) {
  const std::vector<ColumnRun> runs = columnRuns(t);
  double maxRun = 0;
  for (const ColumnRun& r : runs) maxRun = std::max(maxRun, double(r.count) * blockBytes);
  const double p = double(sliceCount(size_t(maxRun), nodeRingSliceBytes(t, chunk)));
  double worst = 0;
  for (int m = 0; m < t.nnodes(); ++m) {
    const size_t l = t.node(m).size();
    std::vector<int> perOwner(l, 0);
    for (const ColumnRun& r : runs) perOwner[size_t(r.column) % l]++;
    const double rounds = *std::max_element(perOwner.begin(), perOwner.end());
    worst = std::max(worst, ringUs(t, t.node(m), maxRun / p, rounds * p * double(l - 1)));
  }
  return worst;
}

// A log-step reduce-scatter / all-gather over `team` (global ranks), blocks of
// `blockBytes`: the steps of algo/log_blocks.h, every member's transfer of a
// step at once, each step cut into pipeline slices (linkPhaseBytes).
double logStepsUs(const Topology& t, const std::vector<int>& team, double blockBytes, size_t chunk,
                  bool reduceScatter) {
  const int n = int(team.size());
  const size_t slice = linkPhaseBytes(&t, chunk);
  double us = 0;
  for (const LogStepShape& sh : logStepShapes(n, reduceScatter)) {
    std::vector<std::pair<int, int>> pairs;
    for (int q = 0; q < n; ++q) pairs.emplace_back(team[size_t(q)], team[size_t(sh.sendsTo(q, n, reduceScatter))]);
    const double slices = double(sliceCount(size_t(sh.blocks * blockBytes), slice));
    us += slices * stepUs(t, pairs, sh.blocks * blockBytes / slices);
  }
  return us;
}

// Mirrors buildHierRingReduceScatter / AllGather and their hier_halving and
// hier_radix forms: per outer slice, the intra ring over the columns, then
// each column's ring (N-1 steps of one block), log-step or radix-k exchange
// across nodes, all of a node's carriers at once; on equal nodes the stage
// inside them runs beside that exchange instead (node_fanout.h, node_fanin.h).
enum class Across { kRing, kLog, kRadix };
// Both forms: the stages one after the other, and side by side (< 0: the
// nodes are not equal).
struct HierForms {
  double sequential = 0, sideBySide = -1;
  // The side-by-side form has costs this model does not see (more flows; on
  // the 4 x 2 namespace nodes a rank late into a reduce-scatter held its
  // node's first step across back: 1.2-1.3x the other form's time at
  // 64 B-1 KiB, 1.04-1.08x at 1-16 MiB, where the model had them level), so
  // it runs only where the model puts it more than 1% ahead.
  bool sideBySidePays() const { return sideBySide >= 0 && sideBySide < 0.99 * sequential; }
};
// `radix`: a radix exchange's (hierRadixFor).
HierForms hierScatterGatherForms(const Topology& t, double bytes, size_t chunk, Across across, bool reduceScatter,
                                 int radix) {
  const double n = t.nranks(), nodes = t.nnodes(), block = bytes / n;
  const double slices = double(hierBlockSlices(t, size_t(block), chunk));
  const double bs = block / slices;
  const AcrossPhases inter = across == Across::kLog     ? logColumnsPhases(t, bs, chunk, reduceScatter)
                             : across == Across::kRadix ? radixColumnsPhases(t, bs, chunk, reduceScatter, radix)
                                                        : ringColumnsPhases(t, bs, nodes - 1, chunk);
  HierForms f;
  f.sequential = slices * (intraColumnRingsUs(t, bs, chunk) + totalUs(inter));
  if (stagesSideBySide(t)) f.sideBySide = slices * (reduceScatter ? fannedInUs(t, inter) : fannedOutUs(t, inter, bs));
  return f;
}

double hierScatterGatherUs(const Topology& t, double bytes, size_t chunk, Across across, bool reduceScatter,
                           bool sideBySide, int radix) {
  const HierForms f = hierScatterGatherForms(t, bytes, chunk, across, reduceScatter, radix);
  return sideBySide && f.sideBySide >= 0 ? f.sideBySide : f.sequential;
}

// The exchange across nodes of a hierarchical reduce-scatter or all-gather.
bool acrossOf(const std::string& algo, Across* across) {
  if (algo == "hier_ring") *across = Across::kRing;
  else if (algo == "hier_halving") *across = Across::kLog;
  else if (algo == "hier_radix") *across = Across::kRadix;
  else return false;
  return true;
}

int ceilLog2(int n) {
  int r = 0;
  while ((1 << r) < n) ++r;
  return r;
}

// A tree inside every node (the deepest counts), then one across the nodes' leaders.
double intraTreesUs(const Topology& t, double bytes, bool reduces) {
  double worst = 0;
  for (int m = 0; m < t.nnodes(); ++m)
    worst = std::max(worst, ceilLog2(int(t.node(m).size())) *
                                (t.intra.us(bytes) + (reduces ? localReduceUs(t, bytes) : 0)));
  return worst;
}

double hierTreeUs(const Topology& t, int root, double bytes, bool reduces) {
  return treeUs(t, leaders(t, root), t.nodeOf(root), bytes, reduces) + intraTreesUs(t, bytes, reduces);
}

// Mirrors buildHierAllToAll with blocks of `block` bytes: on each node L-1
// pairwise steps, each handing a local rank its own block and those of its
// columns' other-node ranks (about N blocks), then each column's N-1 steps
// across nodes, a node's carriers all at once, each message the node's L
// blocks for one rank, in slices (exchangeSlices).
double hierAllToAllUs(const Topology& t, double block) {
  const int nodes = t.nnodes();
  double intra = 0;
  for (int m = 0; m < nodes; ++m) {
    const std::vector<int>& ranks = t.node(m);
    const int l = int(ranks.size());
    double us = 0;
    for (int k = 1; k < l; ++k) {
      std::vector<std::pair<int, int>> pairs;
      for (int i = 0; i < l; ++i) pairs.emplace_back(ranks[size_t(i)], ranks[size_t((i + k) % l)]);
      us += stepUs(t, pairs, block * double(nodes));
    }
    intra = std::max(intra, us);
  }
  const double message = block * t.maxLocal(), slices = double(exchangeSlices(&t, size_t(message), 1));
  return intra + interColumnsUs(t, message / slices, (nodes - 1) * slices);
}

// The flat pairwise all-to-all (all_to_all/pairwise.cc) with blocks of
// `block` bytes: in step k every rank sends its block for rank + k and
// receives rank - k's, each step cut into phases (exchangeSlices). A rank
// moves on as soon as its own receive has landed, its sends completing into
// the peer's buffer, so the ranks of a node drift apart and their node's link
// stays busy while each of them waits out a latency: charging every step a
// latency and then the node's shared bytes put it at 1.4x strata-sim's
// replay at 16 MiB on 8 x 8 ranks. It takes the longer of one rank's own
// chain (each receive at its link's latency, its slice at one stream's rate)
// and the busiest node's link carrying every block that leaves it, after one
// latency and a gap per message. On one node the chain is the whole cost.
// Node by node (pairwiseGoesNodeByNode: a rail for every rank or two), every
// rank takes the same step at once: the L-1 inside the node, then (N-1) L
// across nodes, each a one-to-one pairing of two nodes' ranks whose L
// transfers share the nodes' rails (local rank i on rail i mod R, so the
// busiest rail carries ceil(L/R) of them); nothing drifts, so each step pays
// its latency.
double pairwiseAllToAllUs(const Topology& t, double block) {
  const double n = t.nranks();
  const double perStep = double(exchangeSlices(&t, size_t(block), 1)), slice = block / perStep;
  if (pairwiseGoesNodeByNode(t)) {
    const double l = t.maxLocal();
    const double rails = t.inter.rails, onBusiestRail = std::ceil(l / rails);
    const double remoteHopUs =
        t.inter.alphaUs + (l - 1) * t.inter.gapUs + slice * onBusiestRail * rails / (t.inter.gbps * 1e3);
    return perStep * ((l - 1) * t.intra.us(slice) + (n - l) * remoteHopUs);
  }
  const double interHopUs = t.inter.alphaUs + slice * interStreamUsPerByte(t, 1);
  const double intraHopUs = t.intra.us(slice);
  double chain = 0, link = 0;
  for (int m = 0; m < t.nnodes(); ++m) {
    const double l = double(t.node(m).size()), remote = n - l;
    chain = std::max(chain, perStep * (remote * interHopUs + (l - 1) * intraHopUs));
    if (remote > 0) {
      const double messages = l * remote * perStep;
      link = std::max(link, t.inter.alphaUs + (messages - 1) * t.inter.gapUs +
                                l * remote * block / (t.inter.gbps * 1e3));
    }
  }
  return std::max(chain, link);
}

// Bruck's all-to-all (all_to_all/bruck.cc) with blocks of `block` bytes: the
// blocks laid out, then ceil(log2 n) steps, step k sending the blocks whose
// slot has bit k set to rank - 2^k (in link-sized slices, one phase each,
// after which they are copied back from where they landed), then laid out
// again.
double bruckAllToAllUs(const Topology& t, double block) {
  const int n = t.nranks();
  double us = 2 * localCopyUs(t, block * n);
  for (int k = 0; (1 << k) < n; ++k) {
    std::vector<std::pair<int, int>> pairs;
    for (int r = 0; r < n; ++r) pairs.emplace_back(r, (r - (1 << k) + n) % n);
    const double message = double(bruckBlocksMoved(n, k)) * block;
    const double slices = std::min(double(exchangeSlices(&t, size_t(message), 1)), std::max(block, 1.0));
    us += slices * stepUs(t, pairs, message / slices) + localCopyUs(t, message);
  }
  return us;
}

}  // namespace

size_t collectiveBytes(Coll coll, size_t count, size_t elemSize, int nranks) {
  size_t bytes = count * elemSize;
  bool blocks = coll == Coll::kReduceScatter || coll == Coll::kAllGather || coll == Coll::kAllToAll;
  return blocks ? bytes * size_t(nranks) : bytes;
}

// How a hierarchical reduce-scatter or all-gather runs (the plans ask this;
// stagesSideBySidePay and hierRadixFor answer from it): its stages side by
// side or one after the other, and a radix exchange's radix. Of
// radixCandidates(nodes) the one in whose better form the model puts the
// call fastest, with the latency the link hides taken off as the prediction
// takes it (hidingLatency); more partners only where they gain more than 1%
// (they have costs this model does not see, as the side-by-side form has).
// Without the hiding, lockstep latencies gave a 1-4 MiB all-gather on the
// 8 x 1 namespace nodes radix 8, though their links hide every latency (the
// prediction puts every radix at the bytes' time there): its 7 flows at once
// ran 42.4 / 176.3 ms against recursive doubling's 38.3 / 153.5.
HierShape hierShapeFor(const std::string& algo, Coll coll, size_t bytes, const Topology& t, size_t chunk) {
  if (coll == Coll::kAllReduce && algo == "hier_halving") return {false, 0, hierHalvingAllReduceForm(bytes, t, chunk)};
  Across across;
  if ((coll != Coll::kReduceScatter && coll != Coll::kAllGather) || !acrossOf(algo, &across) || t.nranks() < 2)
    return {};
  const bool rs = coll == Coll::kReduceScatter;
  if (across != Across::kRadix)
    return {hierScatterGatherForms(t, double(bytes), chunk, across, rs, 0).sideBySidePays(), 0, {}};
  HierShape best;
  double bestUs = 0;
  const std::vector<int> radices = radixCandidates(t.nnodes());
  for (auto r = radices.rbegin(); r != radices.rend(); ++r) {  // the fewest partners first
    const bool side = hierScatterGatherForms(t, double(bytes), chunk, across, rs, *r).sideBySidePays();
    const double us = hidingLatencyOf(t, [&](const Topology& m) {
      const HierForms f = hierScatterGatherForms(m, double(bytes), chunk, across, rs, *r);
      return side ? f.sideBySide : f.sequential;
    });
    if (best.radix == 0 || us < 0.99 * bestUs) {
      best = {side, *r, {}};
      bestUs = us;
    }
  }
  return best;
}

namespace {

// The prediction on links that hide none of their latency: every step pays
// its latency and then its bytes. `shape`: how a hierarchical reduce-scatter
// or all-gather runs (hierShapeFor on the real links).
double lockstepUs(const std::string& algo, Coll coll, size_t bytesIn, const Topology& t, size_t chunk, int root,
                  const HierShape& shape) {
  const int n = t.nranks();
  const double bytes = double(bytesIn);
  if (n == 1) return 0;
  const double slices = double(sliceCount(size_t(bytes / n) + 1, chunk));
  switch (coll) {
    case Coll::kAllReduce:
    case Coll::kBarrier:
      if (algo == "ring") return pipelinedRingUs(t, identity(n), bytes / n / slices, 2.0 * (n - 1), slices);
      if (algo == "recursive_doubling") return recursiveDoublingUs(t, identity(n), bytes);
      if (algo == "hier_ring") return hierRingAllReduceUs(t, bytes, chunk);
      if (algo == "hier_halving") return hierHalvingFormUs(t, bytes, chunk, shape.allReduce);
      if (algo == "hier_leader")  // reduce up each node's tree, leaders' recursive doubling, broadcast down
        return intraTreesUs(t, bytes, true) + recursiveDoublingUs(t, leaders(t, t.node(0)[0]), bytes) +
               intraTreesUs(t, bytes, false);
      return -1;
    case Coll::kReduceScatter:
    case Coll::kAllGather:
      if (algo == "ring") return pipelinedRingUs(t, identity(n), bytes / n / slices, double(n - 1), slices);
      if (algo == (coll == Coll::kReduceScatter ? "recursive_halving" : "recursive_doubling"))
        return logStepsUs(t, identity(n), bytes / n, chunk, coll == Coll::kReduceScatter);
      Across across;
      if (acrossOf(algo, &across))
        return hierScatterGatherUs(t, bytes, chunk, across, coll == Coll::kReduceScatter, shape.sideBySide,
                                   shape.radix);
      return -1;
    case Coll::kBroadcast:
    case Coll::kReduce: {
      // Broadcast chains start at the root; reduce chains end there.
      std::vector<int> rankOrder, topoOrder = nodeOrder(t, root);
      for (int i = 0; i < n; ++i) rankOrder.push_back((root + i) % n);
      if (coll == Coll::kReduce) {
        std::rotate(rankOrder.begin(), rankOrder.begin() + 1, rankOrder.end());
        std::reverse(topoOrder.begin(), topoOrder.end());
      }
      if (algo == "chain") return chainUs(t, rankOrder, bytes, chunk);
      if (algo == "tree") return treeUs(t, identity(n), root, bytes, coll == Coll::kReduce);
      if (algo == "hier_chain") return chainUs(t, topoOrder, bytes, chunk);
      if (algo == "hier_tree") return hierTreeUs(t, root, bytes, coll == Coll::kReduce);
      return -1;
    }
    case Coll::kAllToAll:
      if (algo == "pairwise") return pairwiseAllToAllUs(t, bytes / n);
      if (algo == "hier_pairwise") return hierAllToAllUs(t, bytes / n);
      if (algo == "bruck") return bruckAllToAllUs(t, bytes / n);
      return -1;
    default: return -1;
  }
}

}  // namespace

bool stagesSideBySidePay(const std::string& algo, Coll coll, size_t bytes, const Topology& t, size_t chunk) {
  return hierShapeFor(algo, coll, bytes, t, chunk).sideBySide;
}

std::string describeHierShape(const HierShape& shape, const Topology& t) {
  if (t.nnodes() < 2) return "";
  std::string text = shape.radix ? format("radix %d across nodes", shape.radix) : "";
  if (shape.sideBySide) text += std::string(text.empty() ? "" : ", ") + "stages inside and across nodes side by side";
  return text;
}

HierHalvingAllReduceForm hierHalvingAllReduceForm(size_t bytes, const Topology& t, size_t chunk) {
  const int k = t.maxLocal();
  HierHalvingAllReduceForm best{false, k};
  if (t.nnodes() < 2) return best;
  auto predicted = [&](HierHalvingAllReduceForm f) {
    return hidingLatencyOf(t, [&](const Topology& m) { return hierHalvingFormUs(m, double(bytes), chunk, f); });
  };
  double bestUs = predicted(best);
  const double doublingUs = predicted({true, k});
  if (doublingUs < bestUs) {
    best = {true, k};
    bestUs = doublingUs;
  }
  // One part sends one message a node and step where K parts send K: it
  // also takes ties within 1%, as the selector gives them to the algorithm
  // that sends fewer messages (select.cc: costs per message the model does
  // not see only add to the others). On the 4 x 2 namespace cluster, where
  // the probe could not fit a gap, an 8 B all-reduce in K = 2 parts took
  // 462 us against hier_leader's 323, predicted alike.
  if (k > 1 && predicted({true, 1}) <= bestUs * 1.01) best = {true, 1};
  return best;
}

int hierRadixFor(Coll coll, size_t bytes, const Topology& t, size_t chunk) {
  const int radix = hierShapeFor("hier_radix", coll, bytes, t, chunk).radix;
  return radix ? radix : radixFor(t.nnodes());
}

// The lockstep prediction with the links' hidden latency taken off
// (hidingLatency), in the one shape the plan takes.
CostPrediction predictWithLockstepUs(const std::string& algo, Coll coll, size_t bytes, const Topology& t,
                                     size_t chunk, int root) {
  const HierShape shape = hierShapeFor(algo, coll, bytes, t, chunk);
  const double lockstep = lockstepUs(algo, coll, bytes, t, chunk, root, shape);
  if (lockstep <= 0 || t.inter.latencyHidden <= 0 || t.nnodes() < 2) return {lockstep, lockstep};
  const double bytesOnly = lockstepUs(algo, coll, bytes, withoutLatency(t), chunk, root, shape);
  return {hidingLatency(t, lockstep, bytesOnly), lockstep};
}

double networkMessagesPerNode(const std::string& algo, Coll coll, const Topology& t) {
  if (coll != Coll::kAllToAll || t.nnodes() < 2) return -1;
  const int n = t.nranks(), nodes = t.nnodes();
  std::vector<double> leaving(size_t(nodes), 0);
  if (algo == "pairwise") {  // every rank to every rank of the other nodes
    for (int m = 0; m < nodes; ++m) {
      const double l = double(t.node(m).size());
      leaving[size_t(m)] = l * (n - l);
    }
  } else if (algo == "hier_pairwise") {  // every column to its rank on each other node
    for (int m = 0; m < nodes; ++m) leaving[size_t(m)] = double(t.maxLocal()) * (nodes - 1);
  } else if (algo == "bruck") {  // step k: rank r to rank r - 2^k
    for (int k = 0; (1 << k) < n; ++k)
      for (int r = 0; r < n; ++r)
        if (t.nodeOf(r) != t.nodeOf((r - (1 << k) + n) % n)) leaving[size_t(t.nodeOf(r))] += 1;
  } else {
    return -1;
  }
  return *std::max_element(leaving.begin(), leaving.end());
}

double predictUs(const std::string& algo, Coll coll, size_t bytes, const Topology& t, size_t chunk, int root) {
  return predictWithLockstepUs(algo, coll, bytes, t, chunk, root).us;
}

double busBandwidth(Coll coll, size_t bytes, int n, double us) {
  if (us <= 0) return 0;
  double algbw = double(bytes) / (us * 1e3);  // GB/s
  switch (coll) {
    case Coll::kAllReduce: return algbw * 2.0 * (n - 1) / n;
    case Coll::kReduceScatter:
    case Coll::kAllGather:
    case Coll::kAllToAll: return algbw * double(n - 1) / n;
    default: return algbw;
  }
}

}  // namespace strata
