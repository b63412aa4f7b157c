// The seam between strata's links and a tagged-message network library
// (libfabric, UCX). One TaggedEndpoint serves every link of one communicator
// on one rank: a libfabric endpoint per rail with its completion queue, or a
// UCP worker. Links post sends and receives through it; its progress() drives
// the library and reports each completion to the link that posted it.
//
// The endpoint owns the links' state (TaggedLinkState, tagged_channel.cc): a
// posted receive names that memory, so it must outlive the Channel until the
// library can no longer write into it, which is when the endpoint shuts down.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

namespace strata {

class TaggedLinkState;

// One operation in flight. `provider` is the library's per-operation context
// (libfabric's fi_context2 lives there, so it must stay first).
struct TaggedOp {
  alignas(16) uint8_t provider[64] = {};
  TaggedLinkState* link = nullptr;
  void* endpoint = nullptr;  // UCX: the endpoint its callback reports to
  void* request = nullptr;   // UCX: the request handle while in flight
  uint32_t slot = 0;
  bool isSend = false;
  bool isCredit = false;
  bool inFlight = false;
};

// Tags: kind (2 bits) | sender's rank (30 bits) | sequence number (32 bits).
// Every data packet and every credit message has its own sequence number, so
// receives match exactly whatever order the library delivers in, and packets
// can take any rail. Receives never ignore tag bits: libfabric's shm provider
// (1.17 and 1.18, Debian 12's) matches a receive against a message that came
// before it with the mask left in that message's recycled entry, not the
// receive's, so a wildcard receive never found such a message (a credit lost,
// a link stalled: the CI hang in Collectives ofi_3ranks_shm), and a stale
// wildcard mask could let an exact receive take the wrong message.
constexpr uint64_t kTagData = uint64_t(1) << 62;
constexpr uint64_t kTagCredit = uint64_t(2) << 62;
inline uint64_t makeTag(uint64_t kind, int rank, uint64_t seq) {
  return kind | (uint64_t(uint32_t(rank) & 0x3fffffffu) << 32) | (seq & 0xffffffffu);
}

class TaggedEndpoint {
 public:
  TaggedEndpoint();
  virtual ~TaggedEndpoint();
  TaggedEndpoint(const TaggedEndpoint&) = delete;
  TaggedEndpoint& operator=(const TaggedEndpoint&) = delete;
  // "ofi" or "ucx" (the Channel's transportName).
  virtual const char* transportName() const = 0;
  // This rank's address for the peers' set-up (all rails).
  virtual std::vector<uint8_t> address() const = 0;
  // Makes a peer reachable from its address; returns the handle posts use.
  // Throws strataRemoteError when the address does not parse.
  virtual uint64_t addPeer(const std::vector<uint8_t>& address, int peerRank) = 0;
  // Rails (NICs) of this endpoint, and those shared with a peer (the fewer
  // of the two sides' counts): packet s of a link goes on rail s mod that.
  virtual int rails() const { return 1; }
  virtual int peerRails(uint64_t peer) const { return 1; }
  // Post a send / receive. False when the library is out of resources right
  // now (call again after progress()); throws on any other failure.
  virtual bool postSend(uint64_t peer, int rail, const void* buf, size_t len, void* desc,
                        uint64_t tag, TaggedOp* op) = 0;
  virtual bool postRecv(uint64_t peer, int rail, void* buf, size_t len, void* desc, uint64_t tag,
                        TaggedOp* op) = 0;
  // Drives the library; reports completions through completeTaggedOp().
  // Returns true if any operation completed.
  virtual bool progress() = 0;
  // The descriptor a post of `buf` needs on `rail` (registered once and
  // cached), or nullptr when the library needs none.
  virtual void* memoryDescriptor(int rail, void* buf, size_t len) = 0;

  // Link state lives here (see the file comment).
  TaggedLinkState* adopt(std::unique_ptr<TaggedLinkState> link);

 protected:
  // Frees the links' memory: call at the end of a derived destructor, after
  // the library has stopped touching it.
  void releaseLinks();
  // Leaks the links' memory instead: for a library that may still hold
  // pointers into it and will never be closed (transports/ofi/call_watch.h).
  void abandonLinks();

 private:
  std::vector<std::unique_ptr<TaggedLinkState>> links_;
};

// Called by endpoints for every completed, failed or cancelled operation.
// `error` is empty on success.
void completeTaggedOp(TaggedOp* op, size_t bytes, bool cancelled, const std::string& error);

// One endpoint per (communicator, rank) in this process, shared by that
// communicator's links and closed with the last of them.
template <typename Endpoint>
class EndpointRegistry {
 public:
  template <typename Make>
  std::shared_ptr<Endpoint> get(uint64_t commTag, int rank, Make make) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = live_.begin(); it != live_.end();)
      it = it->second.expired() ? live_.erase(it) : std::next(it);
    auto key = std::make_pair(commTag, rank);
    auto it = live_.find(key);
    if (it != live_.end())
      if (auto ep = it->second.lock()) return ep;
    std::shared_ptr<Endpoint> ep = make();
    live_[key] = ep;
    return ep;
  }

 private:
  std::mutex mu_;
  std::map<std::pair<uint64_t, int>, std::weak_ptr<Endpoint>> live_;
};

}  // namespace strata
