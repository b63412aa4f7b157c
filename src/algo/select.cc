#include "algo/select.h"

#include "algo/algorithms.h"
#include "core/dtype.h"
#include "core/error.h"

namespace strata {

namespace {

using Builder = void (*)(const CollArgs&, Plan&);

struct Candidate {
  const char* name;
  Builder build;
};

// The automatic choice: latency algorithms for small messages, pipelined
// bandwidth algorithms above config.smallBytes.
Candidate choose(const CollArgs& a, const Config& cfg) {
  size_t bytes = a.count * dtypeSize(a.dtype);
  bool small = bytes <= cfg.smallBytes;
  const std::string& forced = cfg.algo;
  switch (a.coll) {
    case Coll::kAllReduce:
    case Coll::kBarrier:
      if (forced == "ring") return {"ring", buildRingAllReduce};
      if (forced == "recursive_doubling") return {"recursive_doubling", buildRecursiveDoublingAllReduce};
      if (small || a.count < size_t(a.nranks))
        return {"recursive_doubling", buildRecursiveDoublingAllReduce};
      return {"ring", buildRingAllReduce};
    case Coll::kReduceScatter: return {"ring", buildRingReduceScatter};
    case Coll::kAllGather: return {"ring", buildRingAllGather};
    case Coll::kBroadcast:
      if (forced == "chain" || forced == "ring") return {"chain", buildChainBroadcast};
      if (forced == "tree") return {"tree", buildTreeBroadcast};
      return small ? Candidate{"tree", buildTreeBroadcast} : Candidate{"chain", buildChainBroadcast};
    case Coll::kReduce:
      if (forced == "chain" || forced == "ring") return {"chain", buildChainReduce};
      if (forced == "tree") return {"tree", buildTreeReduce};
      return small ? Candidate{"tree", buildTreeReduce} : Candidate{"chain", buildChainReduce};
    case Coll::kAllToAll: return {"pairwise", buildPairwiseAllToAll};
    default: break;
  }
  fail(strataInternalError, "no algorithm for %s", collName(a.coll));
}

}  // namespace

Plan buildCollectivePlan(const CollArgs& args, const OpDesc& desc, const Config& config) {
  Plan plan;
  plan.ops.push_back(desc);
  plan.elemSize = dtypeSize(args.dtype);
  plan.dtype = args.dtype;
  plan.redop = args.redop;
  plan.nranks = args.nranks;
  Candidate c = choose(args, config);
  plan.algorithm = c.name;
  c.build(args, plan);
  plan.seal();
  return plan;
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

std::string algorithmSummary(const Config& config) {
  return format("algorithms: all_reduce recursive_doubling <= %zu B < ring; broadcast/reduce tree "
                "<= %zu B < chain; reduce_scatter/all_gather ring; alltoall pairwise; pipeline "
                "slice %zu B; forced: %s",
                config.smallBytes, config.smallBytes, config.chunkBytes,
                config.algo.empty() ? "none" : config.algo.c_str());
}

}  // namespace strata
