// What the executor needs from its surroundings: this rank's identity, links
// to peers (made on demand), scratch memory and the timeout. The communicator
// implements it over real transports; unit tests implement it over in-memory
// channels to run plans for many ranks in one process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "algo/plan.h"
#include "transports/transport.h"

namespace strata {

class LinkSet {
 public:
  virtual ~LinkSet() = default;
  virtual int rank() const = 0;
  virtual int timeoutMs() const = 0;
  // Makes sure links to `peers` exist; throws on failure.
  virtual void connect(const std::vector<int>& peers) = 0;
  virtual Channel& channel(int peer) = 0;
  // Every link made so far (polled for liveness while waiting).
  virtual const std::vector<Channel*>& links() const = 0;
  virtual uint8_t* scratch(size_t bytes) = 0;
  // Bytes a link buffers in each direction before the receiver must consume
  // (the smallest over the transports this set may use). Ring plans send a
  // whole slice before receiving, so slices must fit: see pipelineSliceBytes.
  virtual size_t linkCapacity() const = 0;
  // A plan whose bytes on this rank, its output (Plan::recvExtent) and its
  // input where that lies apart (Plan::sendExtent), come to at least this
  // many writes its final bytes (Flow::writesFinalBytes) with streaming
  // stores: more than the cache keeps, so that writing them does not first
  // read every line. Sets that do not say never stream.
  virtual size_t streamedOutputBytes() const { return ~size_t(0); }
  // Whether this launch has more ranks on a machine than CPUs they may run
  // on (Topology::coresShared): a waiting rank then yields its core at once
  // instead of spinning first (Waiter). Sets that do not say have a core each.
  virtual bool coresShared() const { return false; }
  // The last operation descriptor received from `peer` (seq 0: none yet),
  // so that a waiting rank can tell a peer that never arrived from one that
  // is inside the operation too. Sets that do not track it keep the default.
  virtual void noteArrival(int peer, const OpDesc& d) {}
  virtual const OpDesc* lastSeen(int peer) const { return nullptr; }
};

}  // namespace strata
