// The UCX side of one communicator on one rank: a UCP context and worker
// (tagged API), an endpoint per peer made from the peer's worker address.
// UCX reads its own settings (UCX_TLS, UCX_NET_DEVICES, ...) from the
// environment. Completions are collected by the request callbacks during
// ucp_worker_progress and handed to the links after it returns.
#pragma once

#include <ucp/api/ucp.h>

#include <set>
#include <string>
#include <vector>

#include "transports/net/tagged_endpoint.h"

namespace strata {

class UcxEndpoint : public TaggedEndpoint {
 public:
  explicit UcxEndpoint(int expectedPeers);
  ~UcxEndpoint() override;

  const char* transportName() const override { return "ucx"; }
  std::vector<uint8_t> address() const override { return address_; }
  uint64_t addPeer(const std::vector<uint8_t>& address, int peerRank) override;
  bool postSend(uint64_t peer, int rail, const void* buf, size_t len, void* desc, uint64_t tag,
                TaggedOp* op) override;
  bool postRecv(uint64_t peer, int rail, void* buf, size_t len, void* desc, uint64_t tag,
                TaggedOp* op) override;
  bool progress() override;
  void* memoryDescriptor(int, void*, size_t) override { return nullptr; }

  std::string describe() const;

  struct Done {
    TaggedOp* op;
    void* request;
    size_t bytes;
    ucs_status_t status;
  };
  void collect(const Done& d) { done_.push_back(d); }
  void peerFailed(ucp_ep_h ep, ucs_status_t status);

 private:
  void dispatch(bool shuttingDown);
  void closeAll() noexcept;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  std::vector<uint8_t> address_;
  bool eagerOnly_ = false;  // RNDV_THRESH=inf (see wantEagerOnly)
  std::vector<ucp_ep_h> peers_;
  std::vector<int> peerRanks_;
  std::set<TaggedOp*> inFlight_;
  std::vector<Done> done_;
};

}  // namespace strata
