// The libfabric side of one communicator on one rank: per rail (NIC), a
// fabric, domain, reliable-datagram endpoint (FI_EP_RDM, tagged), completion
// queue, address vector and registration cache. Chosen by ofi_select.cc.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "transports/net/tagged_endpoint.h"
#include "transports/ofi/call_watch.h"
#include "transports/ofi/mr_cache.h"

namespace strata {

struct Config;

class OfiEndpoint : public TaggedEndpoint {
 public:
  // Opens one rail per entry of `rails` (fi_info, owned by the caller and
  // copied). A provider call that lasts `callLimit` (the communicator's
  // timeout) is jumped out of (call_watch.h). Throws strataSystemError with
  // the provider's sentence.
  OfiEndpoint(const std::vector<const fi_info*>& rails, std::chrono::milliseconds callLimit);
  ~OfiEndpoint() override;

  const char* transportName() const override { return "ofi"; }
  std::vector<uint8_t> address() const override;
  uint64_t addPeer(const std::vector<uint8_t>& address, int peerRank) override;
  int rails() const override { return int(rails_.size()); }
  int peerRails(uint64_t peer) const override { return int(peers_[peer].size()); }
  bool postSend(uint64_t peer, int rail, const void* buf, size_t len, void* desc, uint64_t tag,
                TaggedOp* op) override;
  bool postRecv(uint64_t peer, int rail, void* buf, size_t len, void* desc, uint64_t tag,
                TaggedOp* op) override;
  bool progress() override;
  void* memoryDescriptor(int rail, void* buf, size_t len) override;

  // "provider tcp;ofi_rxm, fabric ..., domain ..." per rail, for INFO logs.
  std::string describe() const;

 private:
  struct Rail {
    fi_info* info = nullptr;
    fid_fabric* fabric = nullptr;
    fid_domain* domain = nullptr;
    fid_ep* ep = nullptr;
    fid_cq* cq = nullptr;
    fid_av* av = nullptr;
    std::unique_ptr<MrCache> mr;
    std::vector<uint8_t> name;
    bool needsRegistration = false;
  };
  void open(Rail& r, const fi_info* info);
  void closeAll() noexcept;
  void removeDeadRegions() noexcept;
  bool drain(Rail& r);
  CallWatch watch_;  // every call that may spin on a peer goes through it
  std::vector<Rail> rails_;
  std::vector<std::vector<fi_addr_t>> peers_;  // per peer handle: its address on each rail
  std::vector<int> peerRanks_;                 // per peer handle: its rank
  // shm provider only: the peers' processes and shared-memory region names,
  // so that a region a killed peer left in /dev/shm is removed at close.
  struct LocalPeer {
    pid_t pid;
    std::string region;
  };
  std::vector<LocalPeer> localPeers_;
  std::string ownRegion_;  // this endpoint's region (shm provider), "" otherwise
};

}  // namespace strata
