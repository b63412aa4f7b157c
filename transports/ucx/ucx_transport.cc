#include "transports/ucx/ucx_transport.h"

#include "core/error.h"
#include "core/log.h"
#include "transports/net/tagged_channel.h"
#include "transports/net/transport_choice.h"
#include "transports/ucx/ucx_api.h"
#include "transports/ucx/ucx_endpoint.h"

namespace strata {

namespace {

EndpointRegistry<UcxEndpoint>& endpoints() {
  static EndpointRegistry<UcxEndpoint> r;
  return r;
}

}  // namespace

std::string ucxUnavailable(const Config&) {
  std::string why;
  return ucxApi(&why) ? std::string() : why;
}

bool UcxTransport::usable(const LinkContext& ctx) const {
  return linkTransportFor(ctx) == LinkTransport::kUcx;
}

std::unique_ptr<PendingLink> UcxTransport::begin(const LinkContext& ctx, SetupBlob* blob) const {
  std::shared_ptr<UcxEndpoint> ep = endpoints().get(ctx.commTag, ctx.rank, [&] {
    std::string why;
    if (!ucxApi(&why)) fail(strataSystemError, "the ucx transport cannot be used: %s", why.c_str());
    auto made = std::make_shared<UcxEndpoint>(ctx.nranks - 1);
    STRATA_INFO("rank %d: ucx %s", ctx.rank, made->describe().c_str());
    return made;
  });
  return beginTaggedLink(ep, ctx, blob);
}

}  // namespace strata
