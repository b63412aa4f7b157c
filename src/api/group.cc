// strataGroupStart/End: operations issued in between are queued per thread
// and run at the outermost GroupEnd: per communicator, first all sends and
// receives together as one phase (no order of them can deadlock), then the
// collectives, fused where they share collective, dtype, op and root
// (src/fusion/group_fusion.h). A group of device buffers is enqueued on its
// stream as one step of the communicator's device queue (src/device).
#include <algorithm>
#include <atomic>
#include <vector>

#include "api/collectives.h"
#include "api/entry.h"
#include "core/error.h"
#include "device/device_ops.h"
#include "fusion/group_fusion.h"

using namespace strata;

namespace {

struct GroupState {
  std::vector<Request> queued;
};
thread_local GroupState tlsGroup;
thread_local int tlsGroupDepth = 0;
// Groups open on any thread. Every call asks inGroup(); while no thread has a
// group open (the common case) that is one load of this word, not a
// thread-local lookup (a call into the dynamic loader's __tls_get_addr in a
// shared library; the initial-exec TLS model that avoids it cannot be used:
// a library loaded with dlopen after torch finds no static TLS space left).
std::atomic<int> openGroups{0};

}  // namespace

namespace strata {

bool inGroup() { return openGroups.load(std::memory_order_relaxed) != 0 && tlsGroupDepth > 0; }
void enqueue(const Request& r) { tlsGroup.queued.push_back(r); }

}  // namespace strata

extern "C" {

strataResult_t strataGroupStart(void) {
  if (tlsGroupDepth++ == 0) openGroups.fetch_add(1, std::memory_order_relaxed);
  return strataSuccess;
}

strataResult_t strataGroupEnd(void) {
  Comm* current = nullptr;
  return guarded("strataGroupEnd", current, [&] {
    if (tlsGroupDepth == 0) fail(strataInvalidUsage, "strataGroupEnd without strataGroupStart");
    if (--tlsGroupDepth > 0) return;
    openGroups.fetch_sub(1, std::memory_order_relaxed);
    // The group's operations, swapped with the (emptied) previous group's:
    // both vectors keep their memory, so a training loop's groups of a
    // thousand tensors do not grow the queue from nothing every step.
    static thread_local std::vector<Request> ops;
    ops.clear();
    ops.swap(tlsGroup.queued);
    std::vector<Comm*> comms;
    for (const Request& r : ops)
      if (std::find(comms.begin(), comms.end(), r.comm) == comms.end()) comms.push_back(r.comm);
    for (Comm* c : comms) {
      current = liveComm(reinterpret_cast<strataComm_t>(c), "strataGroupEnd");
      static thread_local std::vector<Request> p2p, collectives;  // reused: no allocation per group
      p2p.clear();
      collectives.clear();
      int onDevice = 0, onHost = 0;
      for (const Request& r : ops) {
        if (r.comm != c) continue;
        bool isP2P = r.coll == Coll::kSend || r.coll == Coll::kRecv;
        (isP2P ? p2p : collectives).push_back(r);
        if (r.count) ++(r.onDevice ? onDevice : onHost);
      }
      if (onDevice && onHost)
        fail(strataInvalidUsage, "strataGroupEnd: the group mixes %d operations on device buffers with %d on "
             "host buffers on one communicator; group them separately", onDevice, onHost);
      if (onDevice) {
        enqueueDeviceGroup(*c, p2p, collectives);
        continue;
      }
      drainDeviceQueue(*c);
      runP2P(*c, p2p);
      runGroupCollectives(*c, collectives);
    }
  });
}

}  // extern "C"
