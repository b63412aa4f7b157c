// Detection of this rank's host: hardware (hwloc for NUMA nodes and cores,
// sysfs for NICs, NVML when the driver is present for GPUs and NVLink) and the
// NUMA node the calling thread runs on. Nothing here needs privileges or
// fails: what cannot be read is reported as unknown.
#pragma once

#include "topo/topology.h"

namespace strata {

// Hardware of the host, detected once per process and cached.
const HostHardware& detectHostHardware();
// NUMA node of the CPU this thread last ran on (-1 when unknown).
int currentNumaNode();

}  // namespace strata
