#include "core/comm.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <thread>

#include "algo/select.h"
#include "bootstrap/rendezvous.h"
#include "core/error.h"
#include "core/log.h"
#include "core/link_probe.h"
#include "device/device_queue.h"
#include "fusion/staging_pool.h"
#include "kernels/cpu/reduce.h"
#include "topo/detect.h"
#include "topo/topo_json.h"
#include "transports/net/transport_choice.h"

namespace strata {

namespace {

// The running kernel's boot id: the same in every network namespace and
// container of one machine ("" where unreadable).
std::string kernelBootId() {
  std::string bootId;
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::getline(in, bootId);
  return bootId;
}

uint64_t detectHostHash(const Config& cfg) {
  if (!cfg.hostId.empty()) return hash64("id:" + cfg.hostId);
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  return hash64(std::string(host) + "/" + kernelBootId());
}

// The machine this rank runs on and the CPUs it may use (RankInfo::kernel,
// cpuSet, cpus): by the kernel's boot id, which STRATA_HOSTID and hostnames
// need not match.
void detectCpus(RankInfo& mine) {
  const std::string bootId = kernelBootId();
  if (!bootId.empty()) mine.kernel = uint32_t(hash64("kernel:" + bootId)) | 1;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return;
  std::string bits(reinterpret_cast<const char*>(&set), sizeof set);
  mine.cpuSet = uint32_t(hash64(bits));
  mine.cpus = uint16_t(std::min(CPU_COUNT(&set), 65535));
}

}  // namespace

Comm::Comm(int nranks, int rank, const UniqueIdData& id, Config config)
    : nranks_(nranks), rank_(rank), config_(std::move(config)), secret_(id.secret),
      staging_(std::make_unique<StagingPool>()) {
  checkTransportConfig(config_);
  commTag_ = 0;
  for (uint8_t b : secret_) commTag_ = commTag_ * 131 + b;
  int64_t deadline = nowMs() + config_.timeoutMs;
  SockAddr bind;  // any address, ephemeral port
  RankInfo mine;
  if (!config_.socketIfname.empty()) {
    bind = interfaceAddr(config_.socketIfname);
    mine.addr.ip = bind.ip;
  }
  listener_ = listenOn(bind);
  setNonBlocking(listener_.get());
  mine.addr.port = localAddr(listener_.get()).port;
  recoveryListener_ = listenOn(bind);
  mine.recoveryPort = localAddr(recoveryListener_.get()).port;
  mine.hostHash = detectHostHash(config_);
  detectCpus(mine);
  mine.pid = int32_t(getpid());
  mine.numa = currentNumaNode();
  ranks_ = rendezvous(id.root, secret_, nranks_, rank_, mine, deadline);
  channels_.resize(size_t(nranks_));
  lastSeen_.resize(size_t(nranks_));
  lastSeenSeq_.reset(new std::atomic<uint64_t>[size_t(nranks_)]());
  lastSeenColl_.reset(new std::atomic<uint8_t>[size_t(nranks_)]());
  // Before the topology: probing the network at init already opens links.
  observer_ = std::make_unique<Observer>(ObserverIdentity{rank_, nranks_, commTag_}, config_, &topo_);
  buildTopology();
  if (rank_ == 0) {
    STRATA_INFO("strata %d.%d.%d: %d ranks, kernels %s", STRATA_MAJOR, STRATA_MINOR, STRATA_PATCH,
                nranks_, kernels::isaName());
    STRATA_INFO("%s", config_.describe().c_str());
    STRATA_INFO("%s", algorithmSummary(config_, topo_).c_str());
  }
  if (logLevel() >= LogLevel::kInfo) STRATA_INFO("%s", transportSummary().c_str());
}

Comm::~Comm() {
  deviceQueue_.reset();  // lets enqueued device operations finish while the links are up
  // A communicator destroyed without a failure: its peers may still be
  // taking what it sent last (a peer's close is otherwise a crash to them).
  if (!failed())
    for (Channel* ch : links_) ch->sayGoodbye();
  if (config_.statsAtDestroy) {
    std::string table = observer_->statsSummary();
    std::fwrite(table.data(), 1, table.size(), stderr);
  }
}

void Comm::buildTopology() {
  if (!config_.topoFile.empty()) {
    topo_ = readTopologyFile(config_.topoFile, nranks_);
  } else {
    std::vector<long long> hosts;
    for (const RankInfo& r : ranks_) hosts.push_back((long long)r.hostHash);
    topo_ = Topology::fromNodeIds(hosts);
    for (int r = 0; r < nranks_; ++r) topo_.setNuma(r, ranks_[size_t(r)].numa);
  }
  std::vector<RankCpus> cpus;
  for (const RankInfo& r : ranks_) cpus.push_back(RankCpus{r.kernel, r.cpuSet, r.cpus});
  topo_.coresShared = ranksOutnumberCpus(cpus);  // a fact of this launch, topology file or not
  topo_.host = detectHostHardware();
  topo_.linkBufferBytes = linkCapacity();
  if (topo_.intra.source.empty()) topo_.intra = defaultIntraLink(config_);
  if (!config_.intraLink.empty()) topo_.intra = parseLinkParams(config_.intraLink, "STRATA_INTRA_LINK");
  if (!config_.interLink.empty()) {
    topo_.inter = parseLinkParams(config_.interLink, "STRATA_INTER_LINK");
  } else if (topo_.inter.source.empty()) {
    topo_.inter = defaultInterLink(topo_.host);
    if (topo_.nnodes() > 1 && config_.linkProbe) {
      if (topo_.maxLocal() > 1 && topo_.intra.source.rfind("default", 0) == 0) {
        topo_.intra.alphaUs = std::max(0.1, probeIntraNodeLatency(*this));
        topo_.intra.source = "measured latency, " + topo_.intra.source + " bandwidth";
      }
      topo_.inter = probeInterNodeLink(*this);
    }
  }
  const size_t cache = lastLevelCacheBytes(), onHost = topo_.node(topo_.nodeOf(rank_)).size();
  streamedOutputBytes_ = streamedOutputBytesOf(config_, cache, onHost);
  if (rank_ == 0 && logLevel() >= LogLevel::kInfo) {
    STRATA_INFO("%s", topo_.summary().c_str());
    const std::string why = config_.streamOutputBytes >= 0
                                ? format("STRATA_STREAM_OUTPUT_BYTES=%lld", config_.streamOutputBytes)
                            : cache ? format("last-level cache %zu KiB over %zu ranks on this host", cache >> 10, onHost)
                                    : std::string("last-level cache size unknown");
    if (streamedOutputBytes_ == ~size_t(0)) STRATA_INFO("outputs: written with ordinary stores (%s)", why.c_str());
    else
      STRATA_INFO("outputs: of calls touching %zu bytes or more a rank (output and input apart), "
                  "written with streaming stores where not read again (%s)",
                  streamedOutputBytes_, why.c_str());
  }
  if (!config_.topoDumpFile.empty()) {
    // Without %r only rank 0 writes (every rank has the same topology).
    bool perRank = config_.topoDumpFile.find("%r") != std::string::npos;
    if (rank_ == 0 || perRank) writeTopologyFile(topo_, expandFilePattern(config_.topoDumpFile, rank_));
  }
}

LinkContext Comm::linkContext(int peer) const {
  LinkContext ctx;
  ctx.rank = rank_;
  ctx.peer = peer;
  ctx.nranks = nranks_;
  ctx.initiator = rank_ < peer;
  ctx.local = ranks_[size_t(rank_)];
  ctx.remote = ranks_[size_t(peer)];
  ctx.commTag = commTag_;
  ctx.config = &config_;
  return ctx;
}

std::string Comm::transportSummary() const {
  std::string s = format("rank %d (pid %d, %s): transports", rank_, ranks_[size_t(rank_)].pid,
                         ranks_[size_t(rank_)].addr.str().c_str());
  for (int p = 0; p < nranks_; ++p) {
    if (p == rank_) continue;
    s += format(" %d:%s", p, transportAt(chooseTransport(linkContext(p))).name());
  }
  return s;
}

uint8_t* Comm::scratch(size_t bytes) {
  if (scratch_.size() < bytes) scratch_.resize(bytes);
  return scratch_.data();
}

size_t Comm::linkCapacity() const { return linkCapacityOf(config_); }

void Comm::addChannel(int peer, std::unique_ptr<Channel> ch) {
  links_.push_back(ch.get());
  channels_[size_t(peer)] = std::move(ch);
  observer_->linkOpened(peer, chooseTransport(linkContext(peer)));
  STRATA_TRACE("rank %d: connected to rank %d over %s", rank_, peer,
               channels_[size_t(peer)]->transportName());
}

void Comm::markFailed(strataResult_t code, const std::string& message, bool dump) noexcept {
  // One failure wins, even when the caller's thread and the device queue's
  // proxy fail at once; the loser waits until the winner has published it.
  if (failing_.exchange(true)) {
    while (failCode_.load(std::memory_order_acquire) == strataSuccess) std::this_thread::yield();
    return;
  }
  failMessage_ = message;
  failCode_.store(code, std::memory_order_release);
  for (Channel* ch : links_) ch->sendAbort(code, message);
  listener_.reset();  // ranks still connecting to us learn at once
  if (dump && code == strataTimeout) dumpFlightRecorder("timeout: " + message);
  if (dump && code == strataRemoteError) dumpFlightRecorder("a peer's failure: " + message);
}

void Comm::noteArrival(int peer, const OpDesc& d) {
  lastSeen_[size_t(peer)] = d;
  lastSeenSeq_[size_t(peer)].store(d.seq, std::memory_order_relaxed);
  lastSeenColl_[size_t(peer)].store(uint8_t(d.coll), std::memory_order_relaxed);
}

std::string Comm::lastSeenSummary() const {
  std::string s = "last operation received from each peer:";
  for (int p = 0; p < nranks_; ++p) {
    if (p == rank_) continue;
    auto [seq, coll] = lastSeenFromAnyThread(p);
    s += seq ? format(" rank %d: %s #%llu;", p, collName(coll), (unsigned long long)seq)
             : format(" rank %d: none;", p);
  }
  s.pop_back();
  return s;
}

void Comm::dumpFlightRecorder(const std::string& why) noexcept {
  try {
    observer_->dump(why, {lastSeenSummary()});
  } catch (...) {
  }
}

void Comm::throwFailed() const {
  throw Error(failCode_, format("the communicator failed earlier and must be aborted or destroyed; "
                                "the first error was: %s",
                                failMessage_.c_str()));
}

void Comm::abort() noexcept {
  if (!failed()) dumpFlightRecorder("strataCommAbort");
  markFailed(strataRemoteError, format("rank %d called strataCommAbort", rank_), false);
}

DeviceQueue& Comm::deviceQueue(int device) {
  if (!deviceQueue_) deviceQueue_ = std::make_unique<DeviceQueue>(*this, device);
  return *deviceQueue_;
}

void Comm::setLastError(const std::string& s) { lastError_ = s; }

}  // namespace strata
