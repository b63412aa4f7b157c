#include "transports/net/transport_choice.h"

#include "core/error.h"
#ifdef STRATA_HAVE_OFI
#include "transports/ofi/ofi_transport.h"
#endif
#ifdef STRATA_HAVE_UCX
#include "transports/ucx/ucx_transport.h"
#endif

namespace strata {

namespace {

bool defaultIsOfi() {
#ifdef STRATA_HAVE_OFI
  return ofiHasEfa();
#else
  return false;
#endif
}

LinkTransport byName(const std::string& name) {
  if (name == "shm") return LinkTransport::kShm;
  if (name == "ofi") return LinkTransport::kOfi;
  if (name == "ucx") return LinkTransport::kUcx;
  return LinkTransport::kTcp;
}

// Empty when the transport can be used with this configuration.
std::string unavailable(LinkTransport t, const Config& config) {
  switch (t) {
    case LinkTransport::kOfi:
#ifdef STRATA_HAVE_OFI
      return ofiUnavailable(config);
#else
      return "this strata was built without libfabric (install libfabric-dev and rebuild)";
#endif
    case LinkTransport::kUcx:
#ifdef STRATA_HAVE_UCX
      return ucxUnavailable(config);
#else
      return "this strata was built without UCX (install libucx-dev and rebuild)";
#endif
    default:
      return {};
  }
}

}  // namespace

std::string networkTransportName(const Config& config) {
  if (!config.net.empty()) return config.net;
  return defaultIsOfi() ? "ofi" : "tcp";
}

LinkTransport linkTransportFor(const LinkContext& ctx) {
  const Config& c = *ctx.config;
  bool sameHost = ctx.local.hostHash == ctx.remote.hostHash;
  if (!c.transport.empty()) {
    LinkTransport forced = byName(c.transport);
    // Shared memory cannot reach another host: TCP serves those links.
    return forced == LinkTransport::kShm && !sameHost ? LinkTransport::kTcp : forced;
  }
  if (sameHost) return LinkTransport::kShm;
  return byName(networkTransportName(c));
}

void checkTransportConfig(const Config& config) {
  auto known = [](const std::string& n, bool allowShm) {
    return n == "tcp" || n == "ofi" || n == "ucx" || (allowShm && n == "shm");
  };
  if (!config.transport.empty() && !known(config.transport, true))
    fail(strataInvalidUsage, "STRATA_TRANSPORT=%s is not a transport (shm, tcp, ofi or ucx)",
         config.transport.c_str());
  if (!config.net.empty() && !known(config.net, false))
    fail(strataInvalidUsage, "STRATA_NET=%s is not a network transport (tcp, ofi or ucx)",
         config.net.c_str());
  const char* variable = config.transport.empty() ? "STRATA_NET" : "STRATA_TRANSPORT";
  std::string name = config.transport.empty() ? config.net : config.transport;
  if (name.empty()) return;
  std::string why = unavailable(byName(name), config);
  if (!why.empty())
    fail(strataSystemError, "%s=%s, but %s cannot be used: %s", variable, name.c_str(),
         name.c_str(), why.c_str());
}

}  // namespace strata
