// The bootstrap: a root (a thread in the process that made the unique id, or
// rank 0 for env init) collects every rank's RankInfo and sends each rank the
// whole table. Every bootstrap connection starts with a Hello carrying the
// communicator secret; strangers and garbage are dropped and logged.
#pragma once

#include <vector>

#include "bootstrap/socket.h"
#include "bootstrap/wire.h"

namespace strata {

// Serves one communicator's rendezvous on `listener` in a detached thread,
// then exits (or gives up after timeoutMs).
void startRendezvousRoot(Fd listener, const Secret& secret, int timeoutMs);

// Client side: registers this rank with the root and returns all ranks' info.
// `mine.addr.ip` == 0 means "the address this host uses to reach the root".
std::vector<RankInfo> rendezvous(SockAddr root, const Secret& secret, int nranks, int rank,
                                 RankInfo mine, int64_t deadlineMs);

}  // namespace strata
