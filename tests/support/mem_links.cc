#include "support/mem_links.h"

#include <algorithm>
#include <deque>
#include <mutex>

namespace strata::test {

struct MemFabric::Queue {
  std::mutex mu;
  std::deque<std::vector<uint8_t>> packets;
  size_t headOffset = 0;  // consumed bytes of packets.front()
  int capacity = 4;
};

namespace {

class MemChannel : public Channel {
 public:
  // A packet written through acquireSend may be as large as the whole link
  // (as trySend's streamed packets may): the ring's deadlock-freedom rests
  // on slices fitting the link's bytes, and packets count against its slots.
  MemChannel(MemFabric::Queue& out, MemFabric::Queue& in, size_t linkBytes, const char* transport)
      : out_(out), in_(in), staging_(linkBytes), transport_(transport) {}
  const char* transportName() const override { return transport_; }

  Span acquireSend(size_t maxBytes) override {
    std::lock_guard<std::mutex> lock(out_.mu);
    if (int(out_.packets.size()) >= out_.capacity) return {};
    return {staging_.data(), maxBytes < staging_.size() ? maxBytes : staging_.size()};
  }
  void commitSend(size_t bytes) override {
    std::lock_guard<std::mutex> lock(out_.mu);
    out_.packets.emplace_back(staging_.begin(), staging_.begin() + long(bytes));
  }
  // Like TCP: a streamed packet is declared by its first trySend and filled by
  // later calls, at most kPartialBytes per call; it is delivered when complete.
  size_t trySend(const void* src, size_t n) override {
    if (streamLeft_ == 0) {
      std::lock_guard<std::mutex> lock(out_.mu);
      if (int(out_.packets.size()) >= out_.capacity) return 0;
      streamLeft_ = n;
      streaming_.clear();
    }
    size_t take = std::min({n, streamLeft_, kPartialBytes});
    const auto* p = static_cast<const uint8_t*>(src);
    streaming_.insert(streaming_.end(), p, p + take);
    streamLeft_ -= take;
    if (streamLeft_ == 0) {
      std::lock_guard<std::mutex> lock(out_.mu);
      out_.packets.push_back(std::move(streaming_));
      streaming_ = {};
    }
    return take;
  }

  // Like TCP: only part of a packet may have arrived (at most kPartialBytes,
  // deliberately not a whole number of 8-byte elements).
  ConstSpan peekRecv() override {
    std::lock_guard<std::mutex> lock(in_.mu);
    if (in_.packets.empty()) return {};
    // Deque elements do not move when others are added at the back.
    const std::vector<uint8_t>& p = in_.packets.front();
    return {p.data() + in_.headOffset, std::min(p.size() - in_.headOffset, kPartialBytes)};
  }
  void consumeRecv(size_t n) override {
    std::lock_guard<std::mutex> lock(in_.mu);
    in_.headOffset += n;
    if (in_.headOffset >= in_.packets.front().size()) {
      in_.packets.pop_front();
      in_.headOffset = 0;
    }
  }
  bool progress() override { return false; }
  size_t pollFds(int*, size_t) const override { return 0; }
  void onReadable() override {}
  void sendAbort(strataResult_t, const std::string&) noexcept override {}

 private:
  static constexpr size_t kPartialBytes = 997;  // odd: never a whole number of elements
  MemFabric::Queue& out_;
  MemFabric::Queue& in_;
  std::vector<uint8_t> staging_;
  std::vector<uint8_t> streaming_;  // the packet trySend is filling
  size_t streamLeft_ = 0;
  const char* transport_;
};

}  // namespace

MemFabric::MemFabric(int nranks, size_t slotBytes, int slots, const char* transport)
    : n_(nranks), slotBytes_(slotBytes), slots_(slots), transport_(transport) {
  for (int i = 0; i < n_ * n_; ++i) {
    queues_.push_back(std::make_unique<Queue>());
    queues_.back()->capacity = slots;
  }
}
MemFabric::~MemFabric() = default;
MemFabric::Queue& MemFabric::queue(int from, int to) { return *queues_[size_t(from * n_ + to)]; }

MemLinkSet::MemLinkSet(MemFabric& fabric, int rank) : fabric_(fabric), rank_(rank) {}

void MemLinkSet::connect(const std::vector<int>& peers) {
  for (int p : peers) {
    if (size_t(p) >= channels_.size()) channels_.resize(size_t(p) + 1);
    if (channels_[size_t(p)]) continue;
    channels_[size_t(p)] = std::make_unique<MemChannel>(fabric_.queue(rank_, p), fabric_.queue(p, rank_),
                                                        fabric_.capacity(), fabric_.transport());
    links_.push_back(channels_[size_t(p)].get());
  }
}

size_t MemLinkSet::linkCapacity() const { return fabric_.capacity(); }

uint8_t* MemLinkSet::scratch(size_t bytes) {
  if (scratch_.size() < bytes) scratch_.resize(bytes);
  return scratch_.data();
}

}  // namespace strata::test
