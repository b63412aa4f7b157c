#include "obs/op_record.h"

#include "obs/op_clock.h"

#include "core/dtype.h"
#include "core/error.h"

namespace strata {

const char* opStateName(OpState s) {
  switch (s) {
    case OpState::kRunning: return "running";
    case OpState::kDone: return "done";
    case OpState::kFailed: return "failed";
  }
  return "?";
}

std::string OpRecord::name() const {
  if (p2p) return format("send/recv (%llu ops)", (unsigned long long)desc.count);
  if (repeats > 1)
    return format("%s #%llu-#%llu (%llu calls)", collName(desc.coll), (unsigned long long)firstSeq,
                  (unsigned long long)desc.seq, (unsigned long long)repeats);
  return format("%s #%llu", collName(desc.coll), (unsigned long long)desc.seq);
}

strataStatColl_t statCollOf(const OpFacts& r) {
  return r.p2p ? strataStatSendRecv : statCollOf(r.desc.coll);
}

strataStatColl_t statCollOf(Coll coll) {
  switch (coll) {
    case Coll::kAllReduce: return strataStatAllReduce;
    case Coll::kReduceScatter: return strataStatReduceScatter;
    case Coll::kAllGather: return strataStatAllGather;
    case Coll::kBroadcast: return strataStatBroadcast;
    case Coll::kReduce: return strataStatReduce;
    case Coll::kAllToAll: return strataStatAllToAll;
    case Coll::kBarrier: return strataStatBarrier;
    default: return strataStatSendRecv;
  }
}

const char* statCollName(strataStatColl_t c) {
  static const char* names[] = {"all_reduce", "reduce_scatter", "all_gather", "broadcast",
                                "reduce",     "alltoall",       "send_recv",  "barrier"};
  return unsigned(c) < strataNumStatColls ? names[c] : "?";
}

void OpRecord::fillMicroseconds(double ticksPerUs) {
  if (!startTick) return;  // not timed
  startUs = opclock::toSteadyUs(startTick, ticksPerUs);
  endUs = endTick ? opclock::toSteadyUs(endTick, ticksPerUs) : 0;
}

double busFactor(Coll c, int nranks) {
  double n = nranks;
  switch (c) {
    case Coll::kAllReduce: return 2 * (n - 1) / n;
    case Coll::kReduceScatter:
    case Coll::kAllGather:
    case Coll::kAllToAll: return (n - 1) / n;
    default: return 1;
  }
}

double busFactor(strataStatColl_t c, int nranks) {
  switch (c) {
    case strataStatAllReduce: return busFactor(Coll::kAllReduce, nranks);
    case strataStatReduceScatter: return busFactor(Coll::kReduceScatter, nranks);
    case strataStatAllGather: return busFactor(Coll::kAllGather, nranks);
    case strataStatAllToAll: return busFactor(Coll::kAllToAll, nranks);
    default: return 1;
  }
}

}  // namespace strata
