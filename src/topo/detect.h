// Detection of this rank's host: hardware (hwloc for NUMA nodes and cores,
// sysfs for NICs, NVML when the driver is present for GPUs and NVLink) and the
// NUMA node the calling thread runs on. Nothing here needs privileges or
// fails: what cannot be read is reported as unknown.
#pragma once

#include <cstddef>

#include "topo/topology.h"

namespace strata {

// Hardware of the host, detected once per process and cached.
const HostHardware& detectHostHardware();
// NUMA node of the CPU this thread last ran on (-1 when unknown).
int currentNumaNode();
// Bytes of the host's last-level caches, all of them together (the L3s of
// every socket or chiplet; the L2s where there is no L3), detected once; 0
// when unknown.
size_t lastLevelCacheBytes();

}  // namespace strata
