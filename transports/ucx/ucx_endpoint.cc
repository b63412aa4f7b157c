#include "transports/ucx/ucx_endpoint.h"

#include <dirent.h>

#include <cstdlib>

#include "bootstrap/socket.h"
#include "core/error.h"
#include "core/log.h"
#include "transports/ucx/ucx_api.h"

namespace strata {

namespace {

const UcxApi& api() { return *ucxApi(nullptr); }

void check(ucs_status_t s, const char* what) {
  if (s != UCS_OK) fail(strataSystemError, "UCX: %s failed: %s", what, api().statusString(s));
}

void onSend(void* request, ucs_status_t status, void* user) {
  auto* op = static_cast<TaggedOp*>(user);
  auto* ep = static_cast<UcxEndpoint*>(op->endpoint);
  ep->collect({op, request, 0, status});
}

void onRecv(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info, void* user) {
  auto* op = static_cast<TaggedOp*>(user);
  auto* ep = static_cast<UcxEndpoint*>(op->endpoint);
  ep->collect({op, request, status == UCS_OK ? info->length : 0, status});
}

void onPeerError(void* arg, ucp_ep_h ep, ucs_status_t status) {
  static_cast<UcxEndpoint*>(arg)->peerFailed(ep, status);
}

// Whether this host has an RDMA device (InfiniBand, RoCE, EFA through verbs),
// the only transports on which UCX's rendezvous protocol saves a copy.
bool rdmaDevicePresent() {
  DIR* d = opendir("/sys/class/infiniband");
  if (!d) return false;
  bool any = false;
  while (dirent* e = readdir(d))
    if (e->d_name[0] != '.') any = true;
  closedir(d);
  return any;
}

// Eager messages only, unless the user chose (UCX_RNDV_THRESH) or an RDMA
// device could pull a rendezvous message straight into the posted buffer.
// strata's receives are always posted before the matching send (credits),
// so over TCP or shared memory the rendezvous handshake is only a round trip
// per packet: measured 2 ranks in two namespaces, 64 MiB all-reduce, it costs
// a quarter of the bandwidth (docs/benchmarks/net.md).
bool wantEagerOnly() { return getenv("UCX_RNDV_THRESH") == nullptr && !rdmaDevicePresent(); }

}  // namespace

UcxEndpoint::UcxEndpoint(int expectedPeers) {
  try {
    ucp_config_t* config = nullptr;
    check(api().configRead(nullptr, nullptr, &config), "reading the UCX configuration");
    eagerOnly_ = wantEagerOnly();
    if (eagerOnly_) {
      ucs_status_t m = api().configModify(config, "RNDV_THRESH", "inf");
      if (m != UCS_OK) {
        STRATA_INFO("UCX refused RNDV_THRESH=inf (%s); keeping its rendezvous threshold",
                    api().statusString(m));
        eagerOnly_ = false;
      }
    }
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
    params.features = UCP_FEATURE_TAG;
    params.estimated_num_eps = size_t(expectedPeers);
    ucs_status_t s = api().initVersion(UCP_API_MAJOR, UCP_API_MINOR, &params, config, &context_);
    api().configRelease(config);
    check(s, "ucp_init");
    ucp_worker_params_t wp{};
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SINGLE;
    check(api().workerCreate(context_, &wp, &worker_), "ucp_worker_create");
    ucp_address_t* addr = nullptr;
    size_t len = 0;
    check(api().workerGetAddress(worker_, &addr, &len), "ucp_worker_get_address");
    auto* bytes = reinterpret_cast<const uint8_t*>(addr);
    address_.assign(bytes, bytes + len);
    api().workerReleaseAddress(worker_, addr);
  } catch (...) {
    closeAll();
    throw;
  }
}

UcxEndpoint::~UcxEndpoint() {
  closeAll();
  releaseLinks();
}

void UcxEndpoint::closeAll() noexcept {
  if (worker_) {
    // Receives are cancelled (UCX must stop writing into the links' memory);
    // sends are let finish. Then every endpoint is closed in flush mode: an
    // eager send counts as complete once UCX holds the bytes, so a rank that
    // destroys its communicator right after its last operation must still
    // deliver them (a forced close can drop them, and the peer then sees
    // this rank vanish mid-operation). A dead peer fails the flush at once
    // with error handling, else the deadline ends it.
    for (TaggedOp* op : inFlight_)
      if (op->request && !op->isSend) api().requestCancel(worker_, op->request);
    int64_t deadline = nowMs() + 1000;
    bool cancelledSends = false;
    while (!inFlight_.empty() && nowMs() < deadline + 500) {
      if (!cancelledSends && nowMs() >= deadline) {
        for (TaggedOp* op : inFlight_)
          if (op->request) api().requestCancel(worker_, op->request);
        cancelledSends = true;
      }
      api().workerProgress(worker_);
      dispatch(true);
    }
    deadline = nowMs() + 1000;
    std::vector<ucs_status_ptr_t> closing;
    for (ucp_ep_h ep : peers_) {
      ucp_request_param_t p{};
      p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      p.flags = 0;  // flush, then close
      ucs_status_ptr_t r = api().epCloseNbx(ep, &p);
      if (r && !UCS_PTR_IS_ERR(r)) closing.push_back(r);
    }
    for (ucs_status_ptr_t r : closing) {
      while (api().requestCheckStatus(r) == UCS_INPROGRESS && nowMs() < deadline)
        api().workerProgress(worker_);
      api().requestFree(r);
    }
    peers_.clear();
    api().workerDestroy(worker_);
    worker_ = nullptr;
  }
  if (context_) api().cleanup(context_);
  context_ = nullptr;
}

uint64_t UcxEndpoint::addPeer(const std::vector<uint8_t>& address, int peerRank) {
  if (address.empty())
    fail(strataRemoteError, "rank %d sent an empty UCX worker address", peerRank);
  ucp_ep_params_t p{};
  p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                 UCP_EP_PARAM_FIELD_ERR_HANDLER;
  p.address = reinterpret_cast<const ucp_address_t*>(address.data());
  p.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  p.err_handler.cb = onPeerError;
  p.err_handler.arg = this;
  ucp_ep_h ep = nullptr;
  ucs_status_t s = api().epCreate(worker_, &p, &ep);
  if (s != UCS_OK) {
    // Some transports cannot report peer failures; the liveness socket does.
    STRATA_INFO("UCX cannot report failures of rank %d (%s); connecting without",
                peerRank, api().statusString(s));
    p.err_mode = UCP_ERR_HANDLING_MODE_NONE;
    p.field_mask &= ~uint64_t(UCP_EP_PARAM_FIELD_ERR_HANDLER);
    s = api().epCreate(worker_, &p, &ep);
  }
  if (s != UCS_OK)
    fail(strataSystemError, "UCX could not connect to rank %d: %s", peerRank,
         api().statusString(s));
  peers_.push_back(ep);
  peerRanks_.push_back(peerRank);
  return peers_.size() - 1;
}

bool UcxEndpoint::postSend(uint64_t peer, int, const void* buf, size_t len, void*, uint64_t tag,
                           TaggedOp* op) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.cb.send = onSend;
  p.user_data = op;
  op->endpoint = this;
  ucs_status_ptr_t r = api().tagSendNbx(peers_[peer], buf, len, tag, &p);
  if (r == nullptr) {  // done at once
    completeTaggedOp(op, len, false, {});
  } else if (UCS_PTR_IS_ERR(r)) {
    completeTaggedOp(op, 0, false, api().statusString(UCS_PTR_STATUS(r)));
  } else {
    op->request = r;
    inFlight_.insert(op);
  }
  return true;
}

bool UcxEndpoint::postRecv(uint64_t, int, void* buf, size_t len, void*, uint64_t tag,
                           TaggedOp* op) {
  ucp_request_param_t p{};
  ucp_tag_recv_info_t info{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_RECV_INFO;
  p.cb.recv = onRecv;
  p.user_data = op;
  p.recv_info.tag_info = &info;
  op->endpoint = this;
  ucs_status_ptr_t r = api().tagRecvNbx(worker_, buf, len, tag, ~uint64_t(0), &p);
  if (r == nullptr) {  // the message had already arrived: done at once, no callback
    completeTaggedOp(op, info.length, false, {});
  } else if (UCS_PTR_IS_ERR(r)) {
    completeTaggedOp(op, 0, false, api().statusString(UCS_PTR_STATUS(r)));
  } else {
    op->request = r;
    inFlight_.insert(op);
  }
  return true;
}

bool UcxEndpoint::progress() {
  unsigned n = 0;
  while (unsigned k = api().workerProgress(worker_)) n += k;
  bool any = !done_.empty();
  dispatch(false);
  return any || n > 0;
}

void UcxEndpoint::dispatch(bool shuttingDown) {
  // Completing an op may post new ones (and their callbacks may run in a
  // later progress), so take the list first.
  std::vector<Done> done;
  done.swap(done_);
  for (const Done& d : done) {
    inFlight_.erase(d.op);
    d.op->request = nullptr;
    api().requestFree(d.request);
    bool cancelled = shuttingDown || d.status == UCS_ERR_CANCELED;
    completeTaggedOp(d.op, d.bytes, cancelled,
                     d.status == UCS_OK ? std::string() : api().statusString(d.status));
  }
}

void UcxEndpoint::peerFailed(ucp_ep_h ep, ucs_status_t status) {
  for (size_t i = 0; i < peers_.size(); ++i)
    if (peers_[i] == ep)
      STRATA_INFO("UCX reports the connection to rank %d failed: %s", peerRanks_[i],
                  api().statusString(status));
}

std::string UcxEndpoint::describe() const {
  return format("UCX %s, worker address %zu bytes (UCX_TLS=%s), %s", api().versionString(),
                address_.size(), getenv("UCX_TLS") ? getenv("UCX_TLS") : "(all)",
                eagerOnly_ ? "eager messages only (no RDMA device; UCX_RNDV_THRESH unset)"
                           : "UCX's rendezvous threshold");
}

}  // namespace strata
