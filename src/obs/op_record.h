// One operation as the observability layer sees it: what was called, how it
// ran and when. The flight recorder keeps the last N of them; statistics and
// traces are computed from them.
#pragma once

#include <cstdint>
#include <string>

#include "algo/plan.h"
#include "strata/strata.h"

namespace strata {

enum class OpState : uint8_t { kRunning, kDone, kFailed };
const char* opStateName(OpState s);

struct OpRecord {
  uint64_t id = 0;         // position in this communicator's history (1, 2, ...)
  OpDesc desc;             // for send/recv groups: desc.count = number of operations
  bool p2p = false;        // a group of sends and receives
  uint64_t bytes = 0;      // nccl-tests' data size
  double busFactor = 1;    // busbw = bytes x busFactor / time
  char algorithm[24] = {0};
  OpState state = OpState::kRunning;
  uint64_t startTick = 0, endTick = 0;  // opclock ticks, written by the operation
  int64_t startUs = 0, endUs = 0;  // steady clock (nowUs), filled from the ticks when read
  int64_t waitUs = 0;
  std::string note;        // a long wait's description, or the error
  std::string name() const;  // "all_reduce #7", "send/recv (3 ops)"
  void fillMicroseconds(double ticksPerUs);  // startUs / endUs from the ticks
};

strataStatColl_t statCollOf(const OpRecord& r);
strataStatColl_t statCollOf(Coll coll);
const char* statCollName(strataStatColl_t c);
// nccl-tests' data size and bus factor of a collective on nranks ranks.
uint64_t dataBytes(const OpDesc& d, int nranks);
double busFactor(Coll c, int nranks);

}  // namespace strata
