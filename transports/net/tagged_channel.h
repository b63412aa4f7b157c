// A Channel over a TaggedEndpoint (libfabric or UCX): what the ofi and ucx
// transports share.
//
// Each side keeps a ring of receive slots posted, one tagged receive per
// expected packet sequence number, and a ring of send slots that reductions
// write into (acquireSend) and that are sent as one tagged message each
// (commitSend). Credits keep every send matched to a posted receive: the
// sender may have at most the receiver's slot count of packets beyond what
// the receiver has consumed, and the receiver reports its consumption in a
// small credit message every half window (each credit message with its own
// sequence number, the count in its payload). So the library never buffers an
// unexpected data packet, the receive side is bounded, and a link buffers exactly
// one window, which is what the executor's deadlock rule (link capacity)
// assumes. Packets go round-robin over the endpoint's rails (NICs).
#pragma once

#include <memory>

#include "transports/net/tagged_endpoint.h"
#include "transports/transport.h"

namespace strata {

// Starts a link over `endpoint`: fills this side's set-up blob (receive
// window + address); the PendingLink finishes it with the peer's.
// What one side of a tagged link tells the other: its packet size, window
// and library endpoint address. decodeSetup throws strataRemoteError naming
// the peer when the blob is malformed or its values are out of range.
struct TaggedSetup {
  uint32_t slotBytes = 0, slots = 0;
  std::vector<uint8_t> address;
};
SetupBlob encodeSetup(const TaggedSetup& s);
TaggedSetup decodeSetup(const SetupBlob& b, int peer, const char* transport);

std::unique_ptr<PendingLink> beginTaggedLink(std::shared_ptr<TaggedEndpoint> endpoint,
                                             const LinkContext& ctx, SetupBlob* blob);

}  // namespace strata
