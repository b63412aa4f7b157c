// One operation as the observability layer sees it: what was called, how it
// ran and when. The flight recorder keeps the last N of them; statistics and
// traces are computed from them.
#pragma once

#include <cstdint>
#include <string>

#include "algo/plan.h"
#include "core/dtype.h"
#include "strata/strata.h"

namespace strata {

enum class OpState : uint8_t { kRunning, kDone, kFailed };
const char* opStateName(OpState s);

// What an operation's record holds while it runs: plain data, so that the
// flight recorder can publish it to readers without a lock (obs/seq_lock.h).
struct OpFacts {
  uint64_t id = 0;         // position in this communicator's history (1, 2, ...)
  OpDesc desc;             // for send/recv groups: desc.count = number of operations
  bool p2p = false;        // a group of sends and receives
  OpState state = OpState::kRunning;
  const char* algorithm = "";  // Plan::algorithmName: never freed
  uint64_t bytes = 0;      // nccl-tests' data size
  uint64_t startTick = 0, endTick = 0;  // opclock ticks, written by the operation (0: not timed)
  // Calls whose time this record's stands for in the statistics: 1, more for
  // the one tiny call in kTinyTimedEvery that is timed (exec/tiny_run.h), 0
  // for the tiny calls between (no clock read: startTick and endTick 0).
  uint32_t timeWeight = 1;
  int64_t waitUs = 0;
  // Calls the record stands for: 1, or a run of repeats of one tiny call
  // (FlightRecorder::publishRepeat), seq firstSeq to desc.seq, whose times
  // are those of its timed calls: the first one's start, the last one's end.
  uint64_t repeats = 1, firstSeq = 0;
};

// What the record and the statistics of a repeated tiny call (exec/tiny_run.h)
// take from its plan, worked out once when the plan is compiled instead of
// at every call as Observer::begin / end do: the statistics entry, the data
// size, and the bytes sent and received over the one transport all the
// plan's peers are reached by.
struct RepeatFacts {
  uint64_t key = 0;  // which compiled plan (Observer::repeatFacts numbers them; never 0)
  strataStatColl_t coll = strataStatAllReduce;
  uint64_t bytes = 0;
  unsigned transport = strataNumTransports;  // strataNumTransports: no peer (nothing to count)
  uint64_t sent = 0, received = 0;
};

// One operation as readers see it: its facts, its times in steady-clock
// microseconds, and a note (a long wait's description, or the error).
struct OpRecord : OpFacts {
  int64_t startUs = 0, endUs = 0;  // steady clock (nowUs), filled from the ticks when read
  std::string note;
  std::string name() const;  // "all_reduce #7", "all_reduce #8-#107 (100 calls)", "send/recv (3 ops)"
  void fillMicroseconds(double ticksPerUs);  // startUs / endUs from the ticks
};

strataStatColl_t statCollOf(const OpFacts& r);
strataStatColl_t statCollOf(Coll coll);
const char* statCollName(strataStatColl_t c);
// nccl-tests' data size and bus factor of a collective on nranks ranks.
inline uint64_t dataBytes(const OpDesc& d, int nranks) {
  uint64_t b = d.count * dtypeSize(d.dtype);
  switch (d.coll) {
    case Coll::kReduceScatter:
    case Coll::kAllGather:
    case Coll::kAllToAll: return b * uint64_t(nranks);
    case Coll::kBarrier: return 0;
    default: return b;
  }
}
double busFactor(Coll c, int nranks);
// The bus factor of a statistics entry (send/recv groups and barriers: 1).
double busFactor(strataStatColl_t c, int nranks);

}  // namespace strata
