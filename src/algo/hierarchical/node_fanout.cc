#include "algo/hierarchical/node_fanout.h"

#include <algorithm>
#include <set>

#include "algo/algorithms.h"
#include "core/error.h"

namespace strata {

bool stagesSideBySide(const Topology& t) {
  return t.nnodes() >= 2 && t.uniform() && t.node(0).size() >= 2;
}

namespace {

// Whether a flow of a column's exchange lands one of the column's blocks.
bool landsBlock(const Flow& f) { return f.kind == FlowKind::kRecv && f.dst.valid() && !f.reduce; }

// Flow `f` (a receive) cut into pieces of at most kFanOutPieceBytes, whole
// elements each, in order: a strided flow by whole runs where a run is
// shorter than a piece, else run by run and each run by bytes. `tail`: the
// sender's taper (Flow::taperTo; 0: none); pieces then also end where its
// packets do, so that the pieces taken in turn across partners come in the
// order they land (each partner's first packet, then its second, ...).
std::vector<Flow> cutIntoPieces(const Flow& f, size_t elemSize, size_t tail) {
  const size_t piece = std::max(elemSize, kFanOutPieceBytes / elemSize * elemSize);
  const size_t runs = f.runs, run = runBytes(f);
  if (f.bytes == 0) return {f};
  std::vector<size_t> packetEnds;  // in the flow's bytes, ascending
  if (tail)
    for (size_t at = 0; at < f.bytes;) packetEnds.push_back(at += fragmentBytes(f.bytes - at, tail));
  std::vector<Flow> pieces;
  // `count` whole runs from run `first`, or (count 0) `bytes` of run `first` from `at`.
  auto add = [&](size_t first, size_t count, size_t at, size_t bytes) {
    Flow p = f;
    p.runs = uint32_t(std::max<size_t>(count, 1));
    p.dst = plus(f.dst, first * f.dstStride + at);
    p.bytes = count ? count * run : bytes;
    if (p.runs == 1) p.dstStride = 0;
    pieces.push_back(p);
  };
  // Run r's bytes [a, b) (offsets in the run) cut at every piece and at the packet ends inside.
  auto cutRun = [&](size_t r, size_t a, size_t b) {
    auto e = std::upper_bound(packetEnds.begin(), packetEnds.end(), r * run + a);
    for (size_t at = a; at < b;) {
      size_t end = std::min(b, at + piece);
      while (e != packetEnds.end() && *e <= r * run + at) ++e;
      if (e != packetEnds.end() && *e < r * run + end) end = *e - r * run;
      add(r, 0, at, end - at);
      at = end;
    }
  };
  auto packetEndInside = [&](size_t from, size_t to) {  // one strictly between, in the flow's bytes
    auto e = std::upper_bound(packetEnds.begin(), packetEnds.end(), from);
    return e != packetEnds.end() && *e < to;
  };
  if (runs > 1 && run < piece) {
    const size_t group = piece / run;
    size_t first = 0, count = 0;
    auto flush = [&] {
      if (count) add(first, count, 0, 0);
      count = 0;
    };
    for (size_t r = 0; r < runs; ++r) {
      if (packetEndInside(r * run, (r + 1) * run)) {  // a packet ends inside this run: it goes alone, cut there
        flush();
        cutRun(r, 0, run);
        continue;
      }
      if (count == 0) first = r;
      ++count;
      if (count == group || std::binary_search(packetEnds.begin(), packetEnds.end(), (r + 1) * run)) flush();
    }
    flush();
    return pieces;
  }
  for (size_t r = 0; r < runs; ++r) cutRun(r, 0, run);
  return pieces;
}

// The receives of phase `phase` of a column's exchange that land its blocks.
std::vector<Flow> landedIn(const Plan& across, size_t phase) {
  std::vector<Flow> out;
  const Phase& ph = across.phases[phase];
  for (uint32_t i = ph.first; i < ph.first + ph.count; ++i)
    if (landsBlock(across.flows[i])) out.push_back(across.flows[i]);
  return out;
}

// The flows of one phase of a column's exchange: the others as they are,
// then the receives that land blocks, cut into pieces taken in turn partner
// by partner (each partner's in its order) where several partners send.
struct PhaseFlows {
  std::vector<Flow> others, landing;
};
// `tapered`: the partners taper their sends (Flow::taperTo: to
// tailFragmentFor the partners), so the pieces end where their packets do.
PhaseFlows piecesInTurn(const Plan& across, const Phase& ph, bool tapered) {
  PhaseFlows out;
  std::vector<std::vector<Flow>> byPartner;
  std::vector<int> partners;
  for (uint32_t i = ph.first; i < ph.first + ph.count; ++i) {
    const Flow& f = across.flows[i];
    if (!landsBlock(f)) {
      out.others.push_back(f);
      continue;
    }
    size_t k = 0;
    while (k < partners.size() && partners[k] != f.peer) ++k;
    if (k == partners.size()) {
      partners.push_back(f.peer);
      byPartner.emplace_back();
    }
    byPartner[k].push_back(f);
  }
  if (byPartner.size() < 2) {
    for (const std::vector<Flow>& flows : byPartner) out.landing = flows;
    return out;
  }
  const size_t tail = tapered ? tailFragmentFor(byPartner.size()) : 0;
  std::vector<std::vector<Flow>> cut(byPartner.size());
  for (size_t k = 0; k < byPartner.size(); ++k)
    for (const Flow& f : byPartner[k])
      for (const Flow& p : cutIntoPieces(f, across.elemSize, tail)) cut[k].push_back(p);
  for (size_t turn = 0;; ++turn) {
    bool any = false;
    for (const std::vector<Flow>& pieces : cut)
      if (turn < pieces.size()) {
        out.landing.push_back(pieces[turn]);
        any = true;
      }
    if (!any) break;
  }
  return out;
}

}  // namespace

Plan columnStagePlan(const Plan& outer) {
  Plan p;
  p.elemSize = outer.elemSize;
  p.dtype = outer.dtype;
  p.redop = outer.redop;
  p.nranks = outer.nranks;
  return p;
}

void checkAlignedWith(const Plan& column, const Plan& carried) {
  if (column.phases.size() != carried.phases.size() || column.scratchBytes)
    throw Error(strataInternalError, "the columns of a node take different phases across nodes; "
                                     "their stages cannot run side by side");
}

void emitFannedOutColumns(Plan& plan, const Team& local, const std::vector<NodeColumn>& columns, Ref mine,
                          size_t ownBytes) {
  const NodeColumn& carried = columns[size_t(local.me)];
  for (const NodeColumn& c : columns) checkAlignedWith(c.across, carried.across);
  // A log or radix step's sends across go tapered, so that what lands last,
  // sent on only after it landed, is small (the more partners a step has, the
  // smaller: tailFragmentFor); their receivers only land them. A ring's
  // forward what they receive, so its sends stay whole (Flow::taperTo).
  bool forwards = false;
  for (const Flow& f : carried.across.flows) forwards |= f.kind == FlowKind::kRecv && f.forwardPeer >= 0;
  const size_t phases = carried.across.phases.size();
  for (size_t p = 0; p < phases; ++p) {
    const bool last = p + 1 == phases;
    plan.beginPhase();
    auto toNode = [&](Flow f) {
      for (int q : local.members)
        if (q != local.members[size_t(local.me)]) {
          f.peer = q;
          plan.add(f);
        }
    };
    auto sendOn = [&](const Flow& landing, int32_t trails) {
      Flow out = sendFlow(-1, landing.dst, landing.bytes);
      out.runs = landing.runs;
      out.srcStride = landing.dstStride;
      out.trails = trails;
      toNode(out);
    };
    auto receiveFrom = [&](int carrier, const Flow& landing) {
      Flow in = recvFlow(carrier, landing.dst, landing.bytes);
      in.runs = landing.runs;
      in.dstStride = landing.dstStride;
      plan.add(in);
    };
    // My block to the node, then what landed in the phase before (all of it
    // there by now), my column's flows, and in the last phase each block
    // that lands, fanned out as it lands.
    if (p == 0) toNode(sendFlow(-1, mine, ownBytes));
    if (p > 0)
      for (const Flow& f : landedIn(carried.across, p - 1)) sendOn(f, -1);
    const PhaseFlows mineNow = piecesInTurn(carried.across, carried.across.phases[p], !forwards);
    auto sendsAcross = [](const Flow& f) {
      return f.kind == FlowKind::kSend || (f.kind == FlowKind::kCopy && f.forwardPeer >= 0);
    };
    std::set<int> partners;  // a step's peers across (a radix step's k - 1; its receivers have as many)
    for (const Flow& f : mineNow.others)
      if (sendsAcross(f)) partners.insert(f.kind == FlowKind::kSend ? f.peer : f.forwardPeer);
    for (Flow f : mineNow.others) {
      if (sendsAcross(f) && !forwards) f.taperTo = uint32_t(tailFragmentFor(partners.size()));
      plan.add(f);
    }
    for (const Flow& f : mineNow.landing) {
      const int32_t landing = int32_t(plan.phases.back().count);
      plan.add(f);
      if (last) sendOn(f, landing);
    }
    // The node's other columns, from their carriers, in the order they send them.
    for (size_t j = 0; j < columns.size(); ++j) {
      if (int(j) == local.me) continue;
      const NodeColumn& c = columns[j];
      if (p == 0) plan.add(recvFlow(c.carrier, c.ownBlock, ownBytes));
      if (p > 0)
        for (const Flow& f : landedIn(c.across, p - 1)) receiveFrom(c.carrier, f);
      if (last)
        for (const Flow& f : piecesInTurn(c.across, c.across.phases[p], !forwards).landing) receiveFrom(c.carrier, f);
    }
  }
}

}  // namespace strata
