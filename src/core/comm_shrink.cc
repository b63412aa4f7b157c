// strataCommShrink: the survivors of a communicator build a smaller one with
// no new unique id. Every rank opened a recovery listener at init and its
// port is in the rank table; the lowest surviving rank serves the new
// rendezvous on it, and the others find it there. The new secret is derived
// from the old one and the excluded list, so ranks that disagree on the list
// never meet (the call times out instead of mixing communicators).
#include <algorithm>

#include "bootstrap/rendezvous.h"
#include "core/comm.h"
#include "core/error.h"
#include "core/log.h"

namespace strata {

Comm* Comm::shrink(const std::vector<int>& excluded) {
  if (!recoveryListener_)
    fail(strataInvalidUsage, "strataCommShrink was already called on this communicator (once per communicator)");
  int lowest = -1, newRank = rank_;
  for (int r = 0; r < nranks_; ++r) {
    if (std::binary_search(excluded.begin(), excluded.end(), r)) {
      if (r < rank_) --newRank;
    } else if (lowest < 0) {
      lowest = r;
    }
  }
  int newSize = nranks_ - int(excluded.size());
  std::string text = "shrink:";
  for (uint8_t b : secret_) text += format("%02x", b);
  for (int r : excluded) text += format(",%d", r);
  UniqueIdData id;
  id.secret = secretFromText(text);
  id.root = ranks_[size_t(lowest)].addr;
  id.root.port = ranks_[size_t(lowest)].recoveryPort;
  if (id.root.port == 0)
    fail(strataInternalError, "rank %d has no recovery port in the rank table", lowest);
  if (rank_ == lowest) {
    startRendezvousRoot(std::move(recoveryListener_), id.secret, config_.timeoutMs);
  } else {
    recoveryListener_.reset();
  }
  STRATA_INFO("rank %d: shrinking %d ranks to %d (new rank %d, rendezvous at rank %d %s)", rank_,
              nranks_, newSize, newRank, lowest, id.root.str().c_str());
  return new Comm(newSize, newRank, id, config_);
}

}  // namespace strata
