// The cost model's link parameters when nobody configured them: defaults per
// transport for links inside a node, and for the network either a short
// measurement at init (latency and per-message gap fitted to 8-byte
// all-reduces over every rank with two algorithms, bandwidth from a 2 MiB
// transfer between the first ranks of nodes 0 and 1, the share of latency
// the link hides from a message sent after a quiet spell; shared with every
// rank so that all choose alike) or, with STRATA_LINK_PROBE=0, the NIC speed.
// When the network is measured, so is the latency of a hop inside a node
// (with every rank busy).
#pragma once

#include <string>

#include "core/config.h"
#include "topo/topology.h"

namespace strata {

class Comm;

LinkParams defaultIntraLink(const Config& config);
LinkParams defaultInterLink(const HostHardware& host);
// "alpha_us,GB/s[,gap_us[,latency_hidden]]", e.g. "15,12.5" or "15,12.5,2". Throws strataInvalidArgument naming `what`.
LinkParams parseLinkParams(const std::string& text, const char* what);
// Collective over the communicator: every rank must call it.
LinkParams probeInterNodeLink(Comm& comm);
// Collective too: the latency of a hop inside a node with every rank busy
// (microseconds; 0 when no node has two ranks).
double probeIntraNodeLatency(Comm& comm);

}  // namespace strata
