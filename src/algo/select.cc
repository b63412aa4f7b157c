#include "algo/select.h"

#include <algorithm>
#include <cmath>

#include "algo/algorithms.h"
#include "algo/cost_model.h"
#include "algo/ring_blocks.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"
#include "topo/topology.h"

namespace strata {

namespace {

using Builder = void (*)(const CollArgs&, Plan&);

// Every algorithm, per collective, in order of preference when predictions tie.
struct Algorithm {
  Coll coll;
  const char* name;
  Builder build;
  bool hierarchical;  // needs CollArgs::topo
  // Where the cost model's choice may pick it (nullptr: everywhere);
  // elsewhere it runs only when forced (STRATA_ALGO), and is predicted
  // (strata-model, strata-sim) but not chosen.
  bool (*offeredOn)(const Topology&) = nullptr;
};

// hier_radix sends to k-1 partners a step where hier_halving sends to one;
// the model prices each extra message at the network's gap. That is right
// only where the gap was measured or configured (the link probe cannot fit it
// with one rank per node) and where ranks have CPUs of their own: on the
// 8-namespace-node clusters (8 ranks on 2 cores) a fitted gap moved 0-83 us
// from launch to launch and each extra partner cost the rank's CPU more, so
// that offered there it ran 1.3-2x the best at 64 B-4 KiB
// (docs/benchmarks/scale-radix-offered.md; forced, its many flows at once
// also split a tbf-shaped link unevenly: up to 1.23x at 1-16 MiB). In
// simulation at 8-4096 nodes it is 2-2.6x faster than hier_halving at
// 64 KiB-1 MiB (docs/scaling.md).
bool multiPartnerStepsPriced(const Topology& t) { return t.inter.gapKnown && !t.coresShared; }
// Bruck's all-to-all saves latencies between nodes; on one node its extra
// copies and phases cost more than the model's shared-memory latencies say.
bool acrossNodes(const Topology& t) { return t.nnodes() > 1; }

const Algorithm kAlgorithms[] = {
    {Coll::kAllReduce, "recursive_doubling", buildRecursiveDoublingAllReduce, false},
    {Coll::kAllReduce, "ring", buildRingAllReduce, false},
    {Coll::kAllReduce, "hier_ring", buildHierRingAllReduce, true},
    {Coll::kAllReduce, "hier_leader", buildHierLeaderAllReduce, true},
    {Coll::kAllReduce, "hier_halving", buildHierHalvingAllReduce, true},
    {Coll::kReduceScatter, "ring", buildRingReduceScatter, false},
    {Coll::kReduceScatter, "recursive_halving", buildRecursiveHalvingReduceScatter, false},
    {Coll::kReduceScatter, "hier_ring", buildHierRingReduceScatter, true},
    {Coll::kReduceScatter, "hier_halving", buildHierHalvingReduceScatter, true},
    {Coll::kReduceScatter, "hier_radix", buildHierRadixReduceScatter, true, multiPartnerStepsPriced},
    {Coll::kAllGather, "ring", buildRingAllGather, false},
    {Coll::kAllGather, "recursive_doubling", buildRecursiveDoublingAllGather, false},
    {Coll::kAllGather, "hier_ring", buildHierRingAllGather, true},
    {Coll::kAllGather, "hier_halving", buildHierHalvingAllGather, true},
    {Coll::kAllGather, "hier_radix", buildHierRadixAllGather, true, multiPartnerStepsPriced},
    {Coll::kBroadcast, "tree", buildTreeBroadcast, false},
    {Coll::kBroadcast, "chain", buildChainBroadcast, false},
    {Coll::kBroadcast, "hier_chain", buildHierChainBroadcast, true},
    {Coll::kBroadcast, "hier_tree", buildHierTreeBroadcast, true},
    {Coll::kReduce, "tree", buildTreeReduce, false},
    {Coll::kReduce, "chain", buildChainReduce, false},
    {Coll::kReduce, "hier_chain", buildHierChainReduce, true},
    {Coll::kReduce, "hier_tree", buildHierTreeReduce, true},
    {Coll::kAllToAll, "pairwise", buildPairwiseAllToAll, false},
    {Coll::kAllToAll, "hier_pairwise", buildHierAllToAll, true},
    {Coll::kAllToAll, "bruck", buildBruckAllToAll, false, acrossNodes},
};

Coll tableColl(Coll c) { return c == Coll::kBarrier ? Coll::kAllReduce : c; }

// STRATA_ALGO names that stand for a family: "hier" is each collective's
// bandwidth-optimal hierarchical algorithm, "ring"/"chain" and
// "hier_tree"/"hier_leader" name the same shape for rooted and unrooted ones;
// the log-step shapes answer to either name (recursive_doubling /
// recursive_halving, and "tree" for unrooted collectives; hier_halving /
// hier_doubling).
bool forcedMatches(const std::string& forced, Coll coll, const char* name) {
  std::string n = name;
  if (forced == n) return true;
  bool rooted = coll == Coll::kBroadcast || coll == Coll::kReduce;
  if (forced == "hier") return n == (rooted ? "hier_chain" : coll == Coll::kAllToAll ? "hier_pairwise" : "hier_ring");
  if (rooted && forced == "ring") return n == "chain";
  if (rooted && forced == "hier_ring") return n == "hier_chain";
  if (rooted && forced == "hier_leader") return n == "hier_tree";
  if (!rooted && forced == "hier_tree") return n == "hier_leader";
  const bool logFamily = forced == "tree" || forced == "recursive_doubling" || forced == "recursive_halving";
  if (!rooted && logFamily) return n == "recursive_doubling" || n == "recursive_halving" || n == "bruck";
  if (!rooted && forced == "hier_doubling") return n == "hier_halving";
  if (!rooted && forced == "chain") return n == "ring";
  return false;
}

// Whether a broadcast picks the chain over a tree the model ties it with (on
// one host, 2 ranks: the same prediction): out of place, into outputs beyond
// the cache (the root touches its input and its output: twice the bytes,
// the same on every rank, which share the host's cache). The chain's root
// sends each slice and copies it into place at once, in one pass where the
// slice goes through the shm ring (kernels/cpu/dual_copy.h); the tree's
// root copies its own after the whole send. 2 ranks on the Intel Xeon VM,
// tree against chain in one launch: 16 / 64 MiB 2.53-2.55 against 2.36-2.46
// ms / 11.1-11.2 against 8.7-9.2 with single copy as measured, 3.4-3.8
// against 2.2-2.3 / 15.8-16.2 against 9.1-9.6 through the ring alone; at
// 1-4 MiB (in the cache) the tree is ahead where single copy lends
// (106 against 120-130 us, 443 against 551-572).
bool broadcastPrefersChain(const CollArgs& a, size_t bytes, const Topology& topo) {
  return a.coll == Coll::kBroadcast && !a.inPlace && topo.nnodes() == 1 &&
         a.streamedOutputBytes != ~size_t(0) && 2 * bytes >= a.streamedOutputBytes;
}

// The algorithm for `a`: the forced one if it applies, else the cost model's
// pick. Writes the prediction to *predicted (-1 when forced or no model) and,
// if `why` is given, the candidates' predictions to *why (for the INFO log:
// formatting them costs more than the rest of a small plan's build).
const Algorithm& choose(const CollArgs& a, const Config& cfg, double* predicted, std::string* why) {
  const Coll coll = tableColl(a.coll);
  *predicted = -1;
  if (!cfg.algo.empty())
    for (const Algorithm& alg : kAlgorithms)
      if (alg.coll == coll && (!alg.hierarchical || a.topo) && forcedMatches(cfg.algo, coll, alg.name)) {
        if (why) *why = "forced by STRATA_ALGO";
        return alg;
      }
  const size_t bytes = collectiveBytes(coll, a.count, dtypeSize(a.dtype), a.nranks);
  Topology single;
  const Topology* topo = a.topo;
  if (!topo) {
    single = Topology::singleNode(a.nranks);
    single.intra = LinkParams{1.0, 5.0, "default"};
    topo = &single;
  }
  std::vector<Prediction> cands = predictAll(coll, bytes, *topo, a.chunkBytes, a.root);
  if (!a.topo) {  // hierarchical algorithms need the real topology
    cands.erase(std::remove_if(cands.begin(), cands.end(), [](const Prediction& p) { return p.hierarchical; }),
                cands.end());
  }
  if (cands.empty()) fail(strataInternalError, "no algorithm for %s", collName(a.coll));
  for (const Prediction& p : cands)
    if (why && why->size() < 400) *why += format("%s%s %.1f us", why->empty() ? "" : ", ", p.algorithm.c_str(), p.us);
  size_t picked = pickFastest(cands, topo->nnodes() > 1);
  if (broadcastPrefersChain(a, bytes, *topo))
    for (size_t i = 0; i < cands.size(); ++i)
      if (i != picked && cands[i].algorithm == "chain" && cands[i].us <= cands[picked].us * (1 + kTieFraction)) {
        picked = i;
        if (why) *why += "; the chain among ties: an output beyond the cache";
      }
  const Prediction& pick = cands[picked];
  *predicted = pick.us;
  for (const Algorithm& alg : kAlgorithms)
    if (alg.coll == coll && pick.algorithm == alg.name) return alg;
  fail(strataInternalError, "no algorithm named %s", pick.algorithm.c_str());
}

}  // namespace

std::vector<Prediction> predictAll(Coll coll, size_t bytes, const Topology& topo, size_t chunkBytes, int root) {
  std::vector<Prediction> out;
  coll = tableColl(coll);
  for (const Algorithm& alg : kAlgorithms) {
    if (alg.coll != coll) continue;
    const CostPrediction p = predictWithLockstepUs(alg.name, coll, bytes, topo, chunkBytes, root);
    if (p.us >= 0)
      out.push_back({alg.name, p.us, alg.hierarchical, !alg.offeredOn || alg.offeredOn(topo), p.lockstepUs,
                     networkMessagesPerNode(alg.name, coll, topo)});
  }
  return out;
}

// Predictions within kTieFraction of each other are below what the model can
// tell apart (its parameters come from a few milliseconds of probing on a
// machine whose network stack changes pace from one second to the next).
// Among such ties the one that sends fewer messages across the network wins:
// per-message costs the model does not see (a NIC's message rate, the
// kernel's network processing under load) only add to the others. Where the
// model counts the messages (networkMessagesPerNode: the all-to-alls) the
// fewest win; elsewhere an algorithm that crosses the network once per node
// (hierarchical) beats one that sends from every rank. Measured on 2 nodes x
// 2 ranks: docs/benchmarks/hier.md; on 4 namespace nodes x 2 ranks Bruck's
// all-to-all (5 messages from a node) was predicted 2-3% ahead of
// hier_pairwise (6) at 256 B-1 KiB and ran in 0.66-0.68x its time, but lost
// the tie while only the hierarchical flag counted.
size_t pickFastest(const std::vector<Prediction>& c, bool preferHierarchical) {
  bool anyAutomatic = false;
  for (const Prediction& p : c) anyAutomatic |= p.automatic;
  auto offered = [&](size_t i) { return c[i].automatic || !anyAutomatic; };
  size_t fastest = c.size();
  for (size_t i = 0; i < c.size(); ++i)
    if (offered(i) && (fastest == c.size() || c[i].us < c[fastest].us)) fastest = i;
  auto tied = [&](size_t i) { return offered(i) && c[i].us <= c[fastest].us * (1 + kTieFraction); };
  auto bestOf = [&](auto&& eligible) {
    size_t best = c.size();
    for (size_t i = 0; i < c.size(); ++i) {
      if (!tied(i) || !eligible(i)) continue;
      // A later (more elaborate) algorithm must win by more than 1%, or tie
      // within 1% with more than 1% less latency to hide: where the link
      // hides latency, algorithms whose bytes take longer than their latencies
      // all predict their bytes' time, and the hiding is never whole (on 4 x 2
      // namespace nodes a 16 KiB hierarchical-ring reduce-scatter, with one
      // step more, ran 1.2x hier_halving's time).
      auto lockstep = [&](size_t k) { return c[k].lockstepUs >= 0 ? c[k].lockstepUs : c[k].us; };
      if (best == c.size() || c[i].us < c[best].us * 0.99 ||
          (c[i].us <= c[best].us * 1.01 && lockstep(i) < lockstep(best) * 0.99))
        best = i;
    }
    return best;
  };
  bool counted = true;
  double fewest = -1;
  for (size_t i = 0; i < c.size(); ++i)
    if (tied(i)) {
      counted &= c[i].networkMessages >= 0;
      if (fewest < 0 || c[i].networkMessages < fewest) fewest = c[i].networkMessages;
    }
  size_t pick = c.size();
  if (preferHierarchical && counted)
    pick = bestOf([&](size_t i) { return c[i].networkMessages == fewest; });
  else if (preferHierarchical)
    pick = bestOf([&](size_t i) { return c[i].hierarchical; });
  return pick < c.size() ? pick : bestOf([](size_t) { return true; });
}

Plan buildCollectivePlan(const CollArgs& args, const OpDesc& desc, const Config& config) {
  Plan plan;
  plan.ops.push_back(desc);
  plan.elemSize = dtypeSize(args.dtype);
  plan.dtype = args.dtype;
  plan.redop = args.redop;
  plan.nranks = args.nranks;
  double predicted = -1;
  std::string why;
  const bool explain = args.rank == 0 && logLevel() >= LogLevel::kInfo;
  const Algorithm& alg = choose(args, config, &predicted, explain ? &why : nullptr);
  plan.algorithm = alg.name;
  plan.predictedUs = predicted;
  if (explain)
    STRATA_INFO("%s count %zu %s: %s, predicted %.1f us (%s)", collName(args.coll), args.count,
                dtypeName(args.dtype), alg.name, predicted, why.c_str());
  alg.build(args, plan);
  if (explain && !plan.shape.empty())
    STRATA_INFO("%s count %zu %s: %s runs as %s", collName(args.coll), args.count, dtypeName(args.dtype), alg.name,
                plan.shape.c_str());
  plan.seal();
  return plan;
}

std::vector<std::string> algorithmNames(Coll coll) {
  std::vector<std::string> names;
  for (const Algorithm& alg : kAlgorithms)
    if (alg.coll == tableColl(coll)) names.push_back(alg.name);
  return names;
}

Plan buildP2PPlan(const std::vector<P2POp>& ops, int rank, int nranks) {
  (void)nranks;
  Plan plan;
  plan.algorithm = "p2p";
  plan.elemSize = 1;
  plan.dtype = strataUint8;
  plan.beginPhase();
  // Sends to self are matched, in order, with receives from self: local copies.
  std::vector<size_t> selfSends, selfRecvs;
  for (size_t i = 0; i < ops.size(); ++i) {
    const P2POp& op = ops[i];
    if (op.peer == rank) {
      (op.isSend ? selfSends : selfRecvs).push_back(i);
      continue;
    }
    OpDesc d;
    d.coll = op.isSend ? Coll::kSend : Coll::kRecv;
    d.dtype = op.dtype;
    d.count = op.count;
    d.root = op.peer;
    plan.ops.push_back(d);
    size_t bytes = op.count * dtypeSize(op.dtype);
    // Buffers are named per op: kSend/kRecv offset = op index; the executor
    // maps them through the op table.
    Flow f = op.isSend ? sendFlow(op.peer, Ref{Buf::kSend, i}, bytes)
                       : recvFlow(op.peer, Ref{Buf::kRecv, i}, bytes);
    f.op = uint16_t(plan.ops.size() - 1);
    plan.add(f);
  }
  if (selfSends.size() != selfRecvs.size())
    fail(strataInvalidUsage, "rank %d posted %zu sends to itself but %zu receives from itself in one group",
         rank, selfSends.size(), selfRecvs.size());
  for (size_t k = 0; k < selfSends.size(); ++k) {
    const P2POp& s = ops[selfSends[k]];
    const P2POp& r = ops[selfRecvs[k]];
    size_t sb = s.count * dtypeSize(s.dtype), rb = r.count * dtypeSize(r.dtype);
    if (sb != rb)
      fail(strataMismatch, "rank %d sends %zu bytes to itself but receives %zu bytes from itself",
           rank, sb, rb);
    plan.add(copyFlow(Ref{Buf::kSend, selfSends[k]}, Ref{Buf::kRecv, selfRecvs[k]}, sb));
  }
  plan.seal();
  // Every p2p flow carries its own descriptor (each op is its own message).
  for (Flow& f : plan.flows) {
    if (f.kind == FlowKind::kSend) f.sendsDesc = true;
    if (f.kind == FlowKind::kRecv) f.expectsDesc = true;
  }
  return plan;
}

size_t pipelineSliceBytes(size_t configured, size_t linkCapacity) {
  size_t cap = linkCapacity / 2;
  size_t slice = configured < cap ? configured : cap;
  return slice < 64 ? 64 : slice;
}

std::string algorithmSummary(const Config& config, const Topology& topo) {
  const size_t slice = pipelineSliceBytes(config.chunkBytes, linkCapacityOf(config));
  const size_t inside = nodeRingSliceBytes(topo, slice);
  return format("algorithms chosen by the cost model (predicted fastest); pipeline slice %zu B%s; forced: %s",
                slice, inside != slice ? format(", %zu B in the rings inside a node (its fast link)", inside).c_str() : "",
                config.algo.empty() ? "none" : config.algo.c_str());
}

}  // namespace strata
