// Device-buffer operations of the C API: enqueued on the caller's CUDA stream
// through the communicator's DeviceQueue, returning before they run.
#pragma once

#include <vector>

#include "exec/request.h"

namespace strata {

// Enqueues validated device request `r` on r.stream, cut into pipelined
// chunks of the staging slot's size.
void enqueueDeviceRequest(Request& r);
// Enqueues the device requests of one group on one communicator (one stream)
// as a single step: sends and receives together, then the collectives fused.
void enqueueDeviceGroup(Comm& comm, std::vector<Request>& p2p, std::vector<Request>& collectives);
// Lets the communicator's enqueued device operations finish before a host
// operation runs on it (no-op without any).
void drainDeviceQueue(Comm& comm);

}  // namespace strata
