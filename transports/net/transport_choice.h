// Which transport serves a link: STRATA_TRANSPORT forces one for every link;
// otherwise ranks on one host use shared memory, and ranks on different
// hosts use the network transport, STRATA_NET (by default libfabric when it
// offers the efa provider, else strata's own TCP). Both ends compute the
// same answer from the same rank table and settings; the link Hello carries
// it, so ranks configured differently get an error, not a hang.
#pragma once

#include <string>

#include "transports/transport.h"

namespace strata {

enum class LinkTransport { kShm, kOfi, kUcx, kTcp };

LinkTransport linkTransportFor(const LinkContext& ctx);

// Checks STRATA_TRANSPORT / STRATA_NET at communicator init: unknown names,
// and a transport that is asked for but cannot be used here (not built, the
// library missing, no provider), throw strataInvalidUsage / strataSystemError
// with a sentence.
void checkTransportConfig(const Config& config);

// The network transport's name ("tcp", "ofi" or "ucx") for this configuration.
std::string networkTransportName(const Config& config);

}  // namespace strata
