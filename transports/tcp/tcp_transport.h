// tcp: the transport between hosts (and on one host with STRATA_TRANSPORT=tcp).
// One non-blocking socket per peer carries framed packets (DATA, ABORT).
// Receiving fills a user-space staging area that reductions read in place;
// sending writes user memory directly (plain sends) or from a staging area
// that a reduction fills (forwarded results).
#pragma once

#include "transports/transport.h"

namespace strata {

class TcpTransport : public Transport {
 public:
  const char* name() const override { return "tcp"; }
  bool usable(const LinkContext& ctx) const override;
  std::unique_ptr<PendingLink> begin(const LinkContext& ctx, SetupBlob* blob) const override;
};

}  // namespace strata
