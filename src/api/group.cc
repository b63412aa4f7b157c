// strataGroupStart/End: operations issued in between are queued per thread
// and run at the outermost GroupEnd: per communicator, first all sends and
// receives together as one phase (no order of them can deadlock), then the
// collectives, fused where they share collective, dtype, op and root
// (src/fusion/group_fusion.h).
#include <algorithm>
#include <vector>

#include "api/collectives.h"
#include "api/entry.h"
#include "core/error.h"
#include "fusion/group_fusion.h"

using namespace strata;

namespace {

struct GroupState {
  int depth = 0;
  std::vector<Request> queued;
};
thread_local GroupState tlsGroup;

}  // namespace

namespace strata {

bool inGroup() { return tlsGroup.depth > 0; }
void enqueue(const Request& r) { tlsGroup.queued.push_back(r); }

}  // namespace strata

extern "C" {

strataResult_t strataGroupStart(void) {
  ++tlsGroup.depth;
  return strataSuccess;
}

strataResult_t strataGroupEnd(void) {
  Comm* current = nullptr;
  return guarded("strataGroupEnd", current, [&] {
    if (tlsGroup.depth == 0) fail(strataInvalidUsage, "strataGroupEnd without strataGroupStart");
    if (--tlsGroup.depth > 0) return;
    std::vector<Request> ops;
    ops.swap(tlsGroup.queued);
    std::vector<Comm*> comms;
    for (const Request& r : ops)
      if (std::find(comms.begin(), comms.end(), r.comm) == comms.end()) comms.push_back(r.comm);
    for (Comm* c : comms) {
      current = liveComm(reinterpret_cast<strataComm_t>(c), "strataGroupEnd");
      std::vector<Request> p2p, collectives;
      for (const Request& r : ops) {
        if (r.comm != c) continue;
        bool isP2P = r.coll == Coll::kSend || r.coll == Coll::kRecv;
        (isP2P ? p2p : collectives).push_back(r);
      }
      runP2P(*c, p2p);
      runGroupCollectives(*c, collectives);
    }
  });
}

}  // extern "C"
