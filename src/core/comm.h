// The communicator: who the ranks are and where they live (from the
// bootstrap), this rank's listening socket, its links to peers (made lazily,
// the first time a plan needs them), the collective sequence number, and the
// error state. A communicator that failed (a peer died, timed out, mismatched)
// refuses further operations until it is aborted or destroyed.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "bootstrap/socket.h"
#include "bootstrap/wire.h"
#include "algo/plan_cache.h"
#include "core/config.h"
#include "exec/call_memo.h"
#include "exec/link_set.h"
#include "obs/observer.h"
#include "topo/topology.h"
#include "transports/transport.h"

namespace strata {

class StagingPool;
class DeviceQueue;

class Comm : public LinkSet {
 public:
  // Runs the bootstrap; throws strata::Error on failure.
  Comm(int nranks, int rank, const UniqueIdData& id, Config config);
  ~Comm() override;
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  int rank() const override { return rank_; }
  int timeoutMs() const override { return config_.timeoutMs; }
  int nranks() const { return nranks_; }
  const Config& config() const { return config_; }
  // One thread issues operations; others may read how far it is (seq()).
  uint64_t nextSeq() {
    const uint64_t s = collSeq_.load(std::memory_order_relaxed) + 1;
    collSeq_.store(s, std::memory_order_relaxed);
    return s;
  }
  uint64_t seq() const { return collSeq_.load(std::memory_order_relaxed); }
  PlanCache& plans() { return plans_; }
  // The last call validated on this communicator (its issuing thread only).
  CallMemo lastValidCall;
  const Topology& topology() const { return topo_; }

  // Makes sure links to `peers` exist (accepting any other peer that connects
  // meanwhile). Throws strataTimeout / strataRemoteError.
  void connect(const std::vector<int>& peers) override;
  // One non-blocking step of link set-up for strataRecvAny: calls the peers
  // this rank must call (once; the calls stay pending across operations until
  // the peer answers), and serves whatever has arrived. Never waits.
  void connectStep(const std::vector<int>& peers);
  Channel& channel(int peer) override { return *channels_[size_t(peer)]; }
  bool connected(int peer) const { return channels_[size_t(peer)] != nullptr; }
  // All links made so far (for liveness polling and progress).
  const std::vector<Channel*>& links() const override { return links_; }

  // Scratch memory for plans, reused across calls.
  uint8_t* scratch(size_t bytes) override;
  // Staging buffers for fused operations (src/fusion), pooled.
  StagingPool& stagingPool() { return *staging_; }
  // Fusion contexts on this communicator (strataFusionCreate), and whether one
  // has tensors in flight: its thread then owns the communicator, and other
  // calls on it are refused rather than interleaved in a different order on
  // different ranks.
  std::atomic<int> fusionContexts{0};
  std::atomic<bool> fusionBusy{false};
  size_t linkCapacity() const override;
  size_t streamedOutputBytes() const override { return streamedOutputBytes_; }
  bool coresShared() const override { return topo_.coresShared; }
  // Device-buffer operations (src/device): the queue bound to the first
  // device used, made at that first use; existingDeviceQueue() is null before.
  DeviceQueue& deviceQueue(int device);
  DeviceQueue* existingDeviceQueue() { return deviceQueue_.get(); }
  // strataCommGetAsyncError: the code that failed the communicator, if any.
  strataResult_t failCode() const { return failCode_; }

  // Error state. markFailed() tells every connected peer (ABORT frames) once.
  // A timeout or a peer's failure also dumps the flight recorder (`dump`).
  void markFailed(strataResult_t code, const std::string& message, bool dump = true) noexcept;
  bool failed() const { return failCode_ != strataSuccess; }
  [[noreturn]] void throwFailed() const;
  // Aborting: tell peers and close everything now.
  void abort() noexcept;

  void setLastError(const std::string& s);
  const char* lastError() const { return lastError_.c_str(); }

  std::string transportSummary() const;

  // Observability: the flight recorder, statistics and trace of this communicator.
  Observer& observer() { return *observer_; }
  // Writes the flight recorder with what each peer was last seen in.
  void dumpFlightRecorder(const std::string& why) noexcept;
  void noteArrival(int peer, const OpDesc& d) override;
  const OpDesc* lastSeen(int peer) const override { return &lastSeen_[size_t(peer)]; }
  // The seq and collective of the last descriptor from `peer` ({0, ?}: none),
  // readable from any thread.
  std::pair<uint64_t, Coll> lastSeenFromAnyThread(int peer) const {
    return {lastSeenSeq_[size_t(peer)].load(std::memory_order_relaxed),
            Coll(lastSeenColl_[size_t(peer)].load(std::memory_order_relaxed))};
  }

  // strataCommShrink: a communicator of the ranks not in `excluded` (sorted,
  // unique, not containing this rank), through a rendezvous at the lowest
  // survivor's recovery port. Once per communicator.
  Comm* shrink(const std::vector<int>& excluded);

 private:
  LinkContext linkContext(int peer) const;
  // Placement from host ids (or STRATA_TOPO_FILE), link parameters from
  // configuration, the file, a probe of the network, or defaults.
  void buildTopology();
  struct Handshake;
  struct HandshakeDeleter {
    void operator()(Handshake* h) const;
  };
  Handshake& handshake();
  void addChannel(int peer, std::unique_ptr<Channel> ch);
  std::string lastSeenSummary() const;

  int nranks_, rank_;
  Config config_;
  Secret secret_;
  uint64_t commTag_;
  std::vector<RankInfo> ranks_;
  Topology topo_;
  size_t streamedOutputBytes_ = ~size_t(0);  // streamedOutputBytesOf, at buildTopology
  Fd listener_;
  Fd recoveryListener_;  // kept for strataCommShrink (never accepted otherwise)
  // Links being set up; outlives connect() so that a call left unanswered
  // (connectStep) is finished later instead of dropped.
  std::unique_ptr<Handshake, HandshakeDeleter> handshake_;
  std::vector<int> unreachable_;  // ranks connectStep could not call
  std::unique_ptr<Observer> observer_;
  // The last descriptor received from each peer; the seq and collective also
  // as atomics, for dumps from another thread (SIGUSR1).
  std::vector<OpDesc> lastSeen_;
  std::unique_ptr<std::atomic<uint64_t>[]> lastSeenSeq_;
  std::unique_ptr<std::atomic<uint8_t>[]> lastSeenColl_;
  std::vector<std::unique_ptr<Channel>> channels_;
  std::vector<Channel*> links_;
  std::atomic<uint64_t> collSeq_{0};
  PlanCache plans_;
  std::vector<uint8_t> scratch_;
  std::unique_ptr<StagingPool> staging_;
  std::unique_ptr<DeviceQueue> deviceQueue_;  // destroyed first, in ~Comm (its proxy uses the links)
  std::atomic<bool> failing_{false};  // set by the one markFailed that records the failure
  std::atomic<strataResult_t> failCode_{strataSuccess};
  std::string failMessage_;  // written before failCode_ is published
  std::string lastError_;
};

}  // namespace strata
