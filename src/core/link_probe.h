// The cost model's link parameters when nobody configured them: defaults per
// transport for links inside a node, and for the network either a short
// measurement at init (latency and per-message gap fitted to 8-byte
// all-reduces over every rank with two algorithms, bandwidth from a 2 MiB
// transfer between the first ranks of nodes 0 and 1; shared with every rank
// so that all choose alike) or, with STRATA_LINK_PROBE=0, the NIC speed.
#pragma once

#include <string>

#include "core/config.h"
#include "topo/topology.h"

namespace strata {

class Comm;

LinkParams defaultIntraLink(const Config& config);
LinkParams defaultInterLink(const HostHardware& host);
// "alpha_us,GB/s[,gap_us]", e.g. "15,12.5" or "15,12.5,2". Throws strataInvalidArgument naming `what`.
LinkParams parseLinkParams(const std::string& text, const char* what);
// Collective over the communicator: every rank must call it.
LinkParams probeInterNodeLink(Comm& comm);

}  // namespace strata
