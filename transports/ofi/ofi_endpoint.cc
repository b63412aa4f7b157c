#include "transports/ofi/ofi_endpoint.h"

#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <string>

#include "core/error.h"
#include "core/log.h"
#include "transports/ofi/ofi_api.h"

namespace strata {

namespace {

void check(int rc, const char* what, const fi_info* info) {
  if (rc != 0)
    fail(strataSystemError, "libfabric %s: %s failed: %s", info->fabric_attr->prov_name, what,
         ofiError(rc).c_str());
}

// Errors a provider returns when posting to a peer whose connection is gone
// (the process exited or its link went down): that peer's failure, not ours.
bool connectionLost(ssize_t rc) {
  switch (-rc) {
    case FI_ECONNRESET: case FI_ECONNABORTED: case FI_ECONNREFUSED: case FI_ENOTCONN:
    case FI_ESHUTDOWN: case FI_EHOSTUNREACH: case FI_ENETUNREACH: case FI_ETIMEDOUT:
    case FI_EREMOTEIO: case EPIPE:
      return true;
    default:
      return false;
  }
}

}  // namespace

OfiEndpoint::OfiEndpoint(const std::vector<const fi_info*>& rails, std::chrono::milliseconds callLimit)
    : watch_(format("libfabric %s", rails.empty() ? "?" : rails[0]->fabric_attr->prov_name), callLimit),
      rails_(rails.size()) {
  try {
    for (size_t i = 0; i < rails.size(); ++i) open(rails_[i], rails[i]);
  } catch (...) {
    closeAll();  // the destructor does not run for a constructor that throws
    throw;
  }
}

void OfiEndpoint::open(Rail& r, const fi_info* info) {
  const OfiApi* api = ofiApi(nullptr);
  r.info = api->dupinfo(info);
  check(api->fabric(r.info->fabric_attr, &r.fabric, nullptr), "fi_fabric", info);
  check(fi_domain(r.fabric, r.info, &r.domain, nullptr), "fi_domain", info);
  fi_cq_attr cq{};
  cq.format = FI_CQ_FORMAT_TAGGED;
  cq.size = 4096;
  check(fi_cq_open(r.domain, &cq, &r.cq, nullptr), "fi_cq_open", info);
  fi_av_attr av{};
  av.type = FI_AV_TABLE;
  check(fi_av_open(r.domain, &av, &r.av, nullptr), "fi_av_open", info);
  check(fi_endpoint(r.domain, r.info, &r.ep, nullptr), "fi_endpoint", info);
  check(fi_ep_bind(r.ep, &r.cq->fid, FI_TRANSMIT | FI_RECV), "binding the completion queue", info);
  check(fi_ep_bind(r.ep, &r.av->fid, 0), "binding the address vector", info);
  if (std::strncmp(r.info->fabric_attr->prov_name, "shm", 3) == 0) {
    // The shm provider names its shared-memory region after the pid unless
    // told otherwise; a SIGKILLed process leaves the region behind, and a
    // later process that gets the same pid then fails fi_enable with EBUSY.
    std::random_device rd;
    std::string name = format("strata_%d_%08x%08x", int(getpid()), rd(), rd());
    if (fi_setname(&r.ep->fid, name.data(), name.size() + 1) == 0)  // on failure: the default name
      ownRegion_ = name;
  }
  check(fi_enable(r.ep), "fi_enable", info);
  size_t len = 0;
  fi_getname(&r.ep->fid, nullptr, &len);
  r.name.resize(len);
  check(fi_getname(&r.ep->fid, r.name.data(), &len), "fi_getname", info);
  r.name.resize(len);
  r.needsRegistration = (r.info->domain_attr->mr_mode & FI_MR_LOCAL) != 0;
  r.mr = std::make_unique<MrCache>(r.domain, r.info->fabric_attr->prov_name);
}

OfiEndpoint::~OfiEndpoint() {
  closeAll();
  removeDeadRegions();
  if (watch_.abandoned())
    abandonLinks();  // the provider may hold pointers into them, and it is never closed
  else
    releaseLinks();
}

void OfiEndpoint::closeAll() noexcept {
  // After a call was jumped out of, the provider's own locks may be held:
  // closing could hang, so everything is left to the process's exit.
  auto close = [this](fid_t fid) {
    if (!fid || watch_.abandoned()) return;
    try {
      watch_.run("fi_close", -1, [fid] { return fi_close(fid); });
    } catch (const std::exception&) {  // jumped out: abandoned from here on
    }
  };
  // The endpoints first: after fi_close nothing writes into the links' memory.
  for (Rail& r : rails_)
    if (r.ep) close(&r.ep->fid);
  for (Rail& r : rails_) {
    if (watch_.abandoned()) {
      (void)r.mr.release();
      r = Rail();
      continue;
    }
    r.mr.reset();
    if (r.av) close(&r.av->fid);
    if (r.cq) close(&r.cq->fid);
    if (r.domain) close(&r.domain->fid);
    if (r.fabric) close(&r.fabric->fid);
    if (r.info) ofiApi(nullptr)->freeinfo(r.info);
    r = Rail();
  }
}

void OfiEndpoint::removeDeadRegions() noexcept {
  // The provider removes its region in fi_close, which an abandoned endpoint
  // and a killed peer never reach. Only names strata gave are removed.
  if (watch_.abandoned() && !ownRegion_.empty()) shm_unlink(("/" + ownRegion_).c_str());
  for (const LocalPeer& p : localPeers_)
    if (processGone(p.pid)) shm_unlink(("/" + p.region).c_str());
}

std::vector<uint8_t> OfiEndpoint::address() const {
  // rails (u16), then per rail: length (u16) and the endpoint name; then this
  // process's id (u32), which a shm peer watches (call_watch.h).
  std::vector<uint8_t> out(2);
  uint16_t n = uint16_t(rails_.size());
  std::memcpy(out.data(), &n, 2);
  for (const Rail& r : rails_) {
    uint16_t len = uint16_t(r.name.size());
    out.insert(out.end(), reinterpret_cast<uint8_t*>(&len), reinterpret_cast<uint8_t*>(&len) + 2);
    out.insert(out.end(), r.name.begin(), r.name.end());
  }
  uint32_t pid = uint32_t(getpid());
  out.insert(out.end(), reinterpret_cast<uint8_t*>(&pid), reinterpret_cast<uint8_t*>(&pid) + 4);
  return out;
}

uint64_t OfiEndpoint::addPeer(const std::vector<uint8_t>& address, int peerRank) {
  auto bad = [&] {
    fail(strataRemoteError, "rank %d sent an invalid libfabric address (%zu bytes)", peerRank,
         address.size());
  };
  if (address.size() < 2) bad();
  uint16_t n;
  std::memcpy(&n, address.data(), 2);
  if (n == 0) bad();
  std::vector<fi_addr_t> addrs;
  std::string region;  // rail 0's name: the peer's region when the provider is shm
  size_t at = 2;
  for (uint16_t i = 0; i < n; ++i) {
    uint16_t len;
    if (at + 2 > address.size()) bad();
    std::memcpy(&len, address.data() + at, 2);
    at += 2;
    if (at + len > address.size() || len == 0) bad();
    if (i >= rails_.size()) {  // a rail this side does not have
      at += len;
      continue;
    }
    if (i == 0) {
      const char* name = reinterpret_cast<const char*>(address.data() + at);
      region.assign(name, strnlen(name, len));
    }
    fi_addr_t fa = FI_ADDR_UNSPEC;
    int rc = fi_av_insert(rails_[i].av, address.data() + at, 1, &fa, 0, nullptr);
    if (rc != 1)
      fail(strataSystemError, "libfabric %s could not add rank %d's address: %s",
           rails_[i].info->fabric_attr->prov_name, peerRank, ofiError(rc < 0 ? rc : -FI_EINVAL).c_str());
    addrs.push_back(fa);
    at += len;
  }
  uint32_t pid = 0;
  if (at + 4 != address.size()) bad();
  std::memcpy(&pid, address.data() + at, 4);
  // The shm provider reaches only processes on this host, so the id is
  // theirs; a region is removed only if strata named it (see open()).
  const bool shm = std::strncmp(rails_[0].info->fabric_attr->prov_name, "shm", 3) == 0;
  if (shm && pid > 0 && pid_t(pid) != getpid()) {
    watch_.watchPeerProcess(pid_t(pid), peerRank);
    if (region.rfind("strata_", 0) == 0 && region.find('/') == std::string::npos)
      localPeers_.push_back({pid_t(pid), region});
  }
  peers_.push_back(std::move(addrs));
  peerRanks_.push_back(peerRank);
  return peers_.size() - 1;
}

bool OfiEndpoint::postSend(uint64_t peer, int rail, const void* buf, size_t len, void* desc,
                           uint64_t tag, TaggedOp* op) {
  Rail& r = rails_[size_t(rail)];
  fi_addr_t to = peers_[peer][size_t(rail)];
  ssize_t rc = watch_.run("fi_tsend", peerRanks_[peer], [&] { return fi_tsend(r.ep, buf, len, desc, to, tag, op->provider); });
  if (rc == -FI_EAGAIN) {
    drain(r);
    return false;
  }
  if (rc != 0 && connectionLost(rc))
    fail(strataRemoteError, "rank %d cannot be reached (libfabric %s refused a send of %zu bytes to it: %s); "
         "it exited or its link is down", peerRanks_[peer], r.info->fabric_attr->prov_name, len,
         ofiError(int(rc)).c_str());
  else if (rc != 0)
    fail(strataSystemError, "libfabric %s: fi_tsend of %zu bytes failed: %s",
         r.info->fabric_attr->prov_name, len, ofiError(int(rc)).c_str());
  return true;
}

bool OfiEndpoint::postRecv(uint64_t peer, int rail, void* buf, size_t len, void* desc,
                           uint64_t tag, TaggedOp* op) {
  Rail& r = rails_[size_t(rail)];
  ssize_t rc = watch_.run(
      "fi_trecv", -1, [&] { return fi_trecv(r.ep, buf, len, desc, FI_ADDR_UNSPEC, tag, 0, op->provider); });
  if (rc == -FI_EAGAIN) {
    drain(r);
    return false;
  }
  if (rc != 0)
    fail(strataSystemError, "libfabric %s: fi_trecv of %zu bytes failed: %s",
         r.info->fabric_attr->prov_name, len, ofiError(int(rc)).c_str());
  return true;
}

bool OfiEndpoint::drain(Rail& r) {
  bool any = false;
  for (;;) {
    fi_cq_tagged_entry done[16];
    ssize_t n = watch_.run("fi_cq_read", -1, [&] { return fi_cq_read(r.cq, done, 16); });
    if (n > 0) {
      for (ssize_t i = 0; i < n; ++i)
        completeTaggedOp(static_cast<TaggedOp*>(done[i].op_context), done[i].len, false, {});
      any = true;
      continue;
    }
    if (n == -FI_EAVAIL) {
      fi_cq_err_entry err{};
      if (watch_.run("fi_cq_readerr", -1, [&] { return fi_cq_readerr(r.cq, &err, 0); }) < 0) return any;
      auto* op = static_cast<TaggedOp*>(err.op_context);
      if (!op) continue;
      if (err.err == FI_ECANCELED) {
        completeTaggedOp(op, 0, true, {});
        continue;
      }
      char detail[256] = "";
      const char* prov = fi_cq_strerror(r.cq, err.prov_errno, err.err_data, detail, sizeof(detail));
      completeTaggedOp(op, 0, false,
                       format("%s (%s: %s)", ofiError(err.err).c_str(),
                              r.info->fabric_attr->prov_name, prov ? prov : detail));
      any = true;
      continue;
    }
    return any;  // -FI_EAGAIN: nothing more now
  }
}

bool OfiEndpoint::progress() {
  bool any = false;
  for (Rail& r : rails_) any |= drain(r);
  return any;
}

void* OfiEndpoint::memoryDescriptor(int rail, void* buf, size_t len) {
  Rail& r = rails_[size_t(rail)];
  return r.needsRegistration ? r.mr->descriptor(buf, len) : nullptr;
}

std::string OfiEndpoint::describe() const {
  std::string s;
  for (size_t i = 0; i < rails_.size(); ++i) {
    const fi_info* info = rails_[i].info;
    s += format("%srail %zu: provider %s, fabric %s, domain %s", i ? "; " : "", i,
                info->fabric_attr->prov_name, info->fabric_attr->name, info->domain_attr->name);
  }
  return s;
}

}  // namespace strata
