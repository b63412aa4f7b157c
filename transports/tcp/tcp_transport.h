// tcp: the transport between hosts (and on one host with STRATA_TRANSPORT=tcp).
// One non-blocking socket per peer carries framed packets (DATA, ABORT).
// Receiving fills a user-space staging area that reductions read in place;
// sending writes user memory directly (plain sends) or from a staging area
// that a reduction fills (forwarded results).
#pragma once

#include "transports/transport.h"

namespace strata {

// Setup blob of the calling side: where its side listener is, and the token
// the extra connections must present.
struct ExtraSockets {
  uint16_t port = 0;
  uint16_t count = 0;  // extra sockets beyond the handshake socket
  uint64_t token = 0;
};
constexpr size_t kExtraBlobBytes = 16;
void encodeExtra(const ExtraSockets& e, SetupBlob* blob);
// Throws strataRemoteError naming `peer` if the blob is malformed.
ExtraSockets decodeExtra(const SetupBlob& blob, int peer);

class TcpTransport : public Transport {
 public:
  const char* name() const override { return "tcp"; }
  bool usable(const LinkContext& ctx) const override;
  std::unique_ptr<PendingLink> begin(const LinkContext& ctx, SetupBlob* blob) const override;
};

}  // namespace strata
