#include "device/ipc_plan.h"

#include <algorithm>

#include "core/dtype.h"
#include "core/error.h"

namespace strata {

namespace {

// Elements [begin, end) of a row that rank q reduces for an all-reduce or a
// reduce: equal shares cut on 64-byte boundaries, so that every rank's
// reduction starts where the kernel's 16-byte packs do.
struct Shard {
  size_t begin, end;
};
Shard shardOf(size_t elements, size_t elementBytes, int nranks, int q) {
  const size_t grain = std::max<size_t>(1, 64 / elementBytes);
  const size_t each = (elements + size_t(nranks) - 1) / size_t(nranks);
  const size_t per = (each + grain - 1) / grain * grain;
  return {std::min(elements, size_t(q) * per), std::min(elements, size_t(q + 1) * per)};
}

// dsts = the op over every rank's slot at `offset`, sources in rank order.
IpcReduce reduceAcrossRanks(std::vector<IpcRegion> dsts, size_t offset, size_t count, int nranks) {
  IpcReduce r;
  r.dsts = std::move(dsts);
  r.count = count;
  for (int q = 0; q < nranks; ++q) r.srcs.push_back({q, offset});
  return r;
}

}  // namespace

bool ipcCarries(Coll coll) {
  switch (coll) {
    case Coll::kAllReduce:
    case Coll::kReduceScatter:
    case Coll::kAllGather:
    case Coll::kBroadcast:
    case Coll::kReduce:
    case Coll::kAllToAll: return true;
    default: return false;
  }
}

IpcWork planIpcStep(Coll coll, strataDataType_t dtype, strataRedOp_t op, int root, size_t elements, int nranks,
                    int rank) {
  if (!ipcCarries(coll) || nranks < 1 || nranks > kIpcMaxRanks || rank < 0 || rank >= nranks)
    fail(strataInternalError, "planIpcStep: %s on rank %d of %d is not an IPC step", collName(coll), rank, nranks);
  const size_t e = dtypeSize(dtype), row = elements * e;
  const int n = nranks, me = rank;
  IpcWork w;
  const bool averages = op == strataAvg && (coll == Coll::kAllReduce || coll == Coll::kReduceScatter ||
                                            coll == Coll::kReduce);
  if (averages) w.divisor = uint64_t(n);
  if (elements == 0) return w;
  switch (coll) {
    case Coll::kAllReduce: {
      // Reduce my shard into my slot and, in the same pass, the next rank's;
      // then copy it to every other slot (none on 2 ranks).
      const Shard s = shardOf(elements, e, n, me);
      if (s.end == s.begin) break;
      const size_t at = s.begin * e, bytes = (s.end - s.begin) * e;
      const int next = (me + 1) % n;
      std::vector<IpcRegion> dsts{{me, at}};
      if (next != me) dsts.push_back({next, at});
      w.reduces.push_back(reduceAcrossRanks(dsts, at, s.end - s.begin, n));
      for (int q = 0; q < n; ++q)
        if (q != me && q != next) w.copies.push_back({{q, at}, {me, at}, bytes});
      break;
    }
    case Coll::kReduce: {
      // Reduce my shard straight into the root's slot.
      const Shard s = shardOf(elements, e, n, me);
      if (s.end == s.begin) break;
      const size_t at = s.begin * e;
      w.reduces.push_back(reduceAcrossRanks({{root, at}}, at, s.end - s.begin, n));
      break;
    }
    case Coll::kReduceScatter:
      // Row `me` of every slot, reduced into row `me` of mine.
      w.reduces.push_back(reduceAcrossRanks({{me, size_t(me) * row}}, size_t(me) * row, elements, n));
      break;
    case Coll::kAllGather:
      // My row into the same row of every other slot.
      for (int q = 0; q < n; ++q)
        if (q != me) w.copies.push_back({{q, size_t(me) * row}, {me, size_t(me) * row}, row});
      break;
    case Coll::kBroadcast:
      if (me != root) w.copies.push_back({{me, 0}, {root, 0}, row});
      break;
    case Coll::kAllToAll:
      // My input row q (the first n rows) into output row `me` of slot q
      // (the next n rows).
      for (int q = 0; q < n; ++q) w.copies.push_back({{q, size_t(n + me) * row}, {me, size_t(q) * row}, row});
      break;
    default: break;
  }
  return w;
}

IpcShardWork planIpcShardAllReduce(strataDataType_t dtype, strataRedOp_t op, size_t elements, int nlocal,
                                   int local, int nranks) {
  if (nlocal < 1 || nlocal > kIpcMaxRanks || local < 0 || local >= nlocal)
    fail(strataInternalError, "planIpcShardAllReduce: local rank %d of %d", local, nlocal);
  const size_t e = dtypeSize(dtype);
  IpcShardWork w;
  if (op == strataAvg) w.divisor = uint64_t(nranks);
  const Shard s = shardOf(elements, e, nlocal, local);
  if (s.end == s.begin) return w;
  w.offset = s.begin * e;
  w.count = s.end - s.begin;
  w.reduce = reduceAcrossRanks({{local, w.offset}}, w.offset, w.count, nlocal);
  const int next = (local + 1) % nlocal;
  w.spread.srcs = {{local, w.offset}};
  w.spread.dsts = {{local, w.offset}};
  if (next != local) w.spread.dsts.push_back({next, w.offset});
  w.spread.count = w.count;
  for (int q = 0; q < nlocal; ++q)
    if (q != local && q != next) w.copies.push_back({{q, w.offset}, {local, w.offset}, w.count * e});
  return w;
}

}  // namespace strata
