#include "transports/ofi/ofi_transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/fi_errno.h>

#include <cstring>
#include <set>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "transports/net/tagged_channel.h"
#include "transports/net/transport_choice.h"
#include "transports/ofi/ofi_api.h"
#include "transports/ofi/ofi_endpoint.h"

namespace strata {

namespace {

// Providers in order of preference when STRATA_OFI_PROVIDER is not set.
const char* const kPreferred[] = {"efa", "verbs;ofi_rxm", "tcp;ofi_rxm", "sockets"};

// An fi_info list, freed with the object.
struct InfoList {
  fi_info* head = nullptr;
  ~InfoList() {
    if (head) ofiApi(nullptr)->freeinfo(head);
  }
};

// Asks libfabric for tagged reliable-datagram endpoints (of one provider
// when `provider` is not empty). Returns the error code; 0 on success.
int queryProviders(const OfiApi& api, const std::string& provider, InfoList* out) {
  fi_info* hints = api.dupinfo(nullptr);
  hints->caps = FI_TAGGED;
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  hints->ep_attr->type = FI_EP_RDM;
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  hints->domain_attr->threading = FI_THREAD_DOMAIN;
  if (!provider.empty()) hints->fabric_attr->prov_name = strdup(provider.c_str());
  int rc = api.getinfo(kOfiApiVersion, nullptr, nullptr, 0, hints, &out->head);
  api.freeinfo(hints);
  return rc;
}

bool isIpProvider(const fi_info* i) {
  return i->addr_format == FI_SOCKADDR_IN || i->addr_format == FI_SOCKADDR_IN6 ||
         i->addr_format == FI_SOCKADDR;
}

uint32_t ipv4Of(const fi_info* i) {
  if (i->addr_format != FI_SOCKADDR_IN || !i->src_addr) return 0;
  return static_cast<const sockaddr_in*>(i->src_addr)->sin_addr.s_addr;
}

// The rails for this rank: entries of the chosen provider. IP providers
// (tcp, sockets) use the interface of strata's own data socket, so the peers
// can reach it; NIC providers (efa, verbs) use every NIC (multi-rail).
std::vector<const fi_info*> chooseRails(const fi_info* list, const Config& config,
                                        uint32_t localIp) {
  const fi_info* first = list;  // a named provider, or none of the preferred: libfabric's first
  if (config.ofiProvider.empty()) {
    const fi_info* preferred = nullptr;
    for (const char* want : kPreferred)
      for (const fi_info* i = list; i && !preferred; i = i->next)
        if (std::strcmp(i->fabric_attr->prov_name, want) == 0) preferred = i;
    if (preferred) first = preferred;
  }
  std::string prov = first->fabric_attr->prov_name;
  std::vector<const fi_info*> same;
  for (const fi_info* i = list; i; i = i->next)
    if (prov == i->fabric_attr->prov_name) same.push_back(i);
  std::vector<const fi_info*> domains;
  if (isIpProvider(first)) {
    const fi_info* pick = nullptr;
    for (const fi_info* i : same)
      if (localIp && ipv4Of(i) == localIp) pick = pick ? pick : i;
    for (const fi_info* i : same)
      if (!pick && ipv4Of(i) && ipv4Of(i) != htonl(INADDR_LOOPBACK)) pick = i;
    domains.push_back(pick ? pick : same.front());
  } else {
    std::set<std::string> seen;
    for (const fi_info* i : same)
      if (seen.insert(i->domain_attr->name).second) domains.push_back(i);
  }
  // IP providers: one endpoint (a second on the same interface measured no
  // gain between two namespaces, docs/benchmarks/net.md).
  size_t rails = config.ofiRails > 0 ? size_t(config.ofiRails)
                                     : (isIpProvider(first) ? 1 : domains.size());
  std::vector<const fi_info*> out;
  for (size_t r = 0; r < rails; ++r) out.push_back(domains[r % domains.size()]);
  return out;
}

EndpointRegistry<OfiEndpoint>& endpoints() {
  static EndpointRegistry<OfiEndpoint> r;
  return r;
}

}  // namespace

bool ofiHasEfa() {
  static const bool has = [] {
    const OfiApi* api = ofiApi(nullptr);
    if (!api) return false;
    InfoList list;
    return queryProviders(*api, "efa", &list) == 0 && list.head;
  }();
  return has;
}

std::string ofiUnavailable(const Config& config) {
  std::string why;
  const OfiApi* api = ofiApi(&why);
  if (!api) return why;
  InfoList list;
  int rc = queryProviders(*api, config.ofiProvider, &list);
  if (rc != 0 || !list.head)
    return format("libfabric offers no provider with tagged reliable-datagram endpoints%s%s: %s",
                  config.ofiProvider.empty() ? "" : " named ", config.ofiProvider.c_str(),
                  ofiError(rc ? rc : -FI_ENODATA).c_str());
  return {};
}

bool OfiTransport::usable(const LinkContext& ctx) const {
  return linkTransportFor(ctx) == LinkTransport::kOfi;
}

std::unique_ptr<PendingLink> OfiTransport::begin(const LinkContext& ctx, SetupBlob* blob) const {
  std::shared_ptr<OfiEndpoint> ep = endpoints().get(ctx.commTag, ctx.rank, [&] {
    std::string why;
    const OfiApi* api = ofiApi(&why);
    if (!api) fail(strataSystemError, "the ofi transport cannot be used: %s", why.c_str());
    InfoList list;
    int rc = queryProviders(*api, ctx.config->ofiProvider, &list);
    if (rc != 0 || !list.head)
      fail(strataSystemError, "libfabric found no usable provider%s%s: %s",
           ctx.config->ofiProvider.empty() ? "" : " named ", ctx.config->ofiProvider.c_str(),
           ofiError(rc ? rc : -FI_ENODATA).c_str());
    auto made = std::make_shared<OfiEndpoint>(chooseRails(list.head, *ctx.config, ctx.local.addr.ip),
                                              std::chrono::milliseconds(ctx.config->timeoutMs));
    STRATA_INFO("rank %d: ofi %s", ctx.rank, made->describe().c_str());
    return made;
  });
  return beginTaggedLink(ep, ctx, blob);
}

}  // namespace strata
