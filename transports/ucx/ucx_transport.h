// The UCX transport: links over UCP's tagged API
// (transports/net/tagged_channel.h), one worker per communicator and rank.
#pragma once

#include <string>

#include "transports/transport.h"

namespace strata {

class UcxTransport : public Transport {
 public:
  const char* name() const override { return "ucx"; }
  bool usable(const LinkContext& ctx) const override;
  std::unique_ptr<PendingLink> begin(const LinkContext& ctx, SetupBlob* blob) const override;
};

// Empty when UCX can be used; else the sentence why not.
std::string ucxUnavailable(const Config& config);

}  // namespace strata
