// The negotiation round of a fusion context: every rank says which keys it
// has pending (with count, dtype and op); all learn the keys pending on every
// rank, in rank 0's order, and the keys whose descriptions disagree between
// ranks. When every rank has the same keys in the same order (the usual case
// once training is in step) one 16-byte all-gather settles it; otherwise a
// second all-gather carries the lists.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/comm.h"
#include "strata/strata.h"

namespace strata {

struct PendingKey {
  uint64_t key;
  uint64_t count;
  strataDataType_t dtype;
  strataRedOp_t redop;
};

struct Agreement {
  std::vector<size_t> ready;  // indices into `mine`, in rank 0's order
  // Indices into `mine` whose count / dtype / op differ between ranks, with why.
  std::vector<std::pair<size_t, std::string>> mismatched;
};

// A collective over `comm`; every rank must call it in the same round.
Agreement negotiate(Comm& comm, const std::vector<PendingKey>& mine);

}  // namespace strata
