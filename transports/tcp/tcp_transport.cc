#include "transports/tcp/tcp_transport.h"

#include <cstring>

#include "transports/tcp/tcp_channel.h"

namespace strata {

namespace {

class TcpPendingLink : public PendingLink {
 public:
  TcpPendingLink(int peer, size_t bufferBytes) : peer_(peer), bufferBytes_(bufferBytes) {}
  std::unique_ptr<Channel> finish(Fd socket, const uint8_t*) override {
    return std::make_unique<TcpChannel>(std::move(socket), peer_, bufferBytes_);
  }

 private:
  int peer_;
  size_t bufferBytes_;
};

}  // namespace

bool TcpTransport::usable(const LinkContext& ctx) const {
  return ctx.config->transport.empty() || ctx.config->transport == "tcp" ||
         ctx.local.hostHash != ctx.remote.hostHash;
}

std::unique_ptr<PendingLink> TcpTransport::begin(const LinkContext& ctx,
                                                 uint8_t blob[kSetupBlobBytes]) const {
  std::memset(blob, 0, kSetupBlobBytes);
  return std::make_unique<TcpPendingLink>(ctx.peer, ctx.config->tcpBufferBytes);
}

}  // namespace strata
