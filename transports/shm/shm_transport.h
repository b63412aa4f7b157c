// shm: the transport between ranks of one host. Each side creates an "inbox"
// segment in POSIX shared memory that the peer writes into: a ring of
// fixed-size slots, one packet per slot, each published by a word at the
// slot's start (so a small packet costs the reader one cache line) and
// released through a consumed counter on its own line (shm_ring.h). The sender's reduction writes its output
// straight into the peer's slot and the receiver reduces straight from it, so
// a byte crosses memory once per hop. Waiting is the executor's job; this
// class never blocks.
#pragma once

#include "transports/transport.h"

namespace strata {

class ShmTransport : public Transport {
 public:
  const char* name() const override { return "shm"; }
  bool usable(const LinkContext& ctx) const override;
  std::unique_ptr<PendingLink> begin(const LinkContext& ctx, SetupBlob* blob) const override;
};

}  // namespace strata
