// strataRecvAny: finding the rank whose send to this rank arrives first.
#pragma once

#include "core/comm.h"

namespace strata {

// Waits until some peer's next message on its link to this rank is a send
// (its operation header is there) and returns that peer. Links to peers not
// yet connected are set up meanwhile (a sender of higher rank waits for this
// rank to call it). Peers that are gone are skipped; throws strataTimeout
// after the communicator's timeout, or the error of the last live peer.
int awaitAnySender(Comm& comm);

}  // namespace strata
