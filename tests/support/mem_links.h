// In-memory links for running the real executor on many ranks (threads) in
// one process: each directed pair is a bounded queue of packets, so flow
// control and deadlock-freedom of plans are exercised as with real
// transports, without sockets or shared memory. Like TCP, they accept and
// reveal packets only in pieces of at most 997 bytes.
#pragma once

#include <memory>
#include <vector>

#include "exec/link_set.h"

namespace strata::test {

class MemFabric;

// The LinkSet of one rank on a MemFabric.
class MemLinkSet : public LinkSet {
 public:
  MemLinkSet(MemFabric& fabric, int rank);
  int rank() const override { return rank_; }
  int timeoutMs() const override { return 20000; }
  void connect(const std::vector<int>& peers) override;
  Channel& channel(int peer) override { return *channels_[size_t(peer)]; }
  const std::vector<Channel*>& links() const override { return links_; }
  uint8_t* scratch(size_t bytes) override;
  size_t linkCapacity() const override;

 private:
  MemFabric& fabric_;
  int rank_;
  std::vector<std::unique_ptr<Channel>> channels_;
  std::vector<Channel*> links_;
  std::vector<uint8_t> scratch_;
};

// Shared queues between n ranks; `slots` packets of at most `slotBytes` each
// per direction. `transport`: the name the channels give (a test may have
// them pose as shm, whose packets arrive whole as these do up to 997 bytes).
class MemFabric {
 public:
  MemFabric(int nranks, size_t slotBytes, int slots, const char* transport = "mem");
  ~MemFabric();
  struct Queue;
  Queue& queue(int from, int to);
  size_t slotBytes() const { return slotBytes_; }
  size_t capacity() const { return slotBytes_ * size_t(slots_); }
  const char* transport() const { return transport_; }

 private:
  int n_;
  size_t slotBytes_;
  int slots_;
  const char* transport_;
  std::vector<std::unique_ptr<Queue>> queues_;
};

}  // namespace strata::test
