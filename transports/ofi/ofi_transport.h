// The libfabric transport: links over reliable-datagram endpoints with tagged
// messages (transports/net/tagged_channel.h), one endpoint set per
// communicator and rank. Which provider and NICs: ofi_transport.cc.
#pragma once

#include <string>

#include "transports/transport.h"

namespace strata {

class OfiTransport : public Transport {
 public:
  const char* name() const override { return "ofi"; }
  bool usable(const LinkContext& ctx) const override;
  std::unique_ptr<PendingLink> begin(const LinkContext& ctx, SetupBlob* blob) const override;
};

// Whether libfabric loads and offers the efa provider (the default network
// transport then). Asked once per process.
bool ofiHasEfa();
// Empty when libfabric can serve this configuration; else the sentence why not.
std::string ofiUnavailable(const Config& config);

}  // namespace strata
