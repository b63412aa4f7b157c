#include "replay.h"

#include <simgrid/s4u.hpp>

#include <algorithm>
#include <deque>
#include <stdexcept>
#include <string>

#include "core/error.h"

namespace sg4 = simgrid::s4u;

namespace strata::sim {

namespace {

// What travels in a message: the fragment's size (its bytes are not
// modelled) and when its transfer ended, which the sender writes when its put
// completes (the receiver may take it later). Both sides hold it.
struct Fragment {
  uint64_t bytes;
  double transferred = -1;
  int holders = 2;
};

void release(Fragment* f) {
  if (--f->holders == 0) delete f;
}

sg4::Mailbox* channel(int from, int to) {
  return sg4::Mailbox::by_name(std::to_string(from) + ">" + std::to_string(to));
}

// One rank: runs its plan's phases, one event loop per phase.
class RankActor {
 public:
  RankActor(int rank, ReplayInput* in, std::vector<double>* finish, std::vector<uint32_t>* phasesDone)
      : rank_(rank), in_(in), finish_(finish), phasesDone_(phasesDone) {}

  void operator()() {
    const ReplayPlan& plan = in_->plans[size_t(rank_)];
    for (const ReplayFlow& f : plan.flows)
      if (f.kind == FlowKind::kRecv) channel(f.peer, rank_)->set_receiver(sg4::Actor::self());
    if (!in_->startDelayS.empty() && in_->startDelayS[size_t(rank_)] > 0)
      sg4::this_actor::sleep_for(in_->startDelayS[size_t(rank_)]);
    uint32_t first = 0;
    for (uint32_t end : plan.phaseEnd) {
      runPhase(plan, first, end);
      first = end;
      (*phasesDone_)[size_t(rank_)]++;
    }
    (*finish_)[size_t(rank_)] = sg4::Engine::get_clock();
  }

 private:
  // A flow's bytes leaving this rank (a Send, or what a Recv / Copy forwards).
  struct OutItem {
    uint64_t bytes = 0, avail = 0, sent = 0;
    uint32_t taperTo = 0;  // Flow::taperTo
    bool rampsUp = false;  // Flow::rampsUp
  };
  // The items to one peer, one after the other on one channel.
  struct OutStream {
    int peer = -1;
    std::deque<size_t> items;
    Fragment* inFlight = nullptr;
    double injectAt = -1;  // its next fragment's slot in the node's injection queue (ReplayInput::gapS)
  };
  // A Recv flow: fragments from `peer`, reduced or not, maybe forwarded and
  // sent on by Sends that trail it.
  struct InItem {
    uint64_t bytes = 0, got = 0;
    bool reduce = false;
    std::vector<size_t> feeds;  // the OutItems its value makes ready: its forward, the trailing Sends
    // A Recv that trails another (Flow::trails): its fragments wait, once
    // arrived, until that one has delivered as many bytes.
    long trails = -1;
    uint64_t waiting = 0, released = 0, delivered = 0;
    std::vector<size_t> trailedBy;
  };
  struct InStream {
    int peer = -1;
    std::deque<size_t> items;
    bool posted = false;
    Fragment* arriving = nullptr;
  };
  enum class What : uint8_t { kOut, kIn, kReduce, kCopy };
  struct Tag {
    What what;
    size_t index;    // stream (kOut, kIn) or in-item (kReduce)
    uint64_t bytes;  // kReduce
  };

  template <typename Stream>
  static size_t streamTo(std::vector<Stream>& v, int peer) {
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i].peer == peer) return i;
    v.push_back(Stream{});
    v.back().peer = peer;
    return v.size() - 1;
  }

  void runPhase(const ReplayPlan& plan, uint32_t first, uint32_t end) {
    out_.clear();
    outItems_.clear();
    inStreams_.clear();
    inItems_.clear();
    acts_.clear();
    tags_.clear();
    landings_.clear();
    outOfItem_.clear();
    inItemOf_.assign(end - first, -1);
    for (uint32_t i = first; i < end; ++i) {
      const ReplayFlow& f = plan.flows[i];
      long fwd = -1;
      if (f.forward >= 0 || f.kind == FlowKind::kSend) {
        OutItem o;
        o.bytes = f.bytes;
        o.taperTo = f.taperTo;
        o.rampsUp = f.rampsUp;
        // A Send's or Copy's bytes are all there, a trailing Send's as its Recv lands them.
        o.avail = f.kind == FlowKind::kRecv || f.trails >= 0 ? 0 : f.bytes;
        outItems_.push_back(o);
        fwd = long(outItems_.size() - 1);
        size_t s = streamTo(out_, f.kind == FlowKind::kSend ? f.peer : f.forward);
        out_[s].items.push_back(size_t(fwd));
        outOfItem_.push_back(s);
        if (f.kind == FlowKind::kSend && f.trails >= 0)
          inItems_[size_t(inItemOf_[size_t(f.trails)])].feeds.push_back(size_t(fwd));
      }
      if (f.kind == FlowKind::kRecv) {
        InItem r;
        r.bytes = f.bytes;
        r.reduce = f.reduce;
        if (fwd >= 0) r.feeds.push_back(size_t(fwd));
        if (f.trails >= 0) {
          r.trails = inItemOf_[size_t(f.trails)];
          inItems_[size_t(r.trails)].trailedBy.push_back(inItems_.size());
        }
        inItems_.push_back(r);
        inItemOf_[i - first] = long(inItems_.size() - 1);
        inStreams_[streamTo(inStreams_, f.peer)].items.push_back(inItems_.size() - 1);
      }
      if (f.localCopyBytes > 0) start(sg4::this_actor::exec_async(2.0 * double(f.localCopyBytes) / in_->memoryGbps),
                                      {What::kCopy, 0, 0});
    }
    for (size_t s = 0; s < out_.size(); ++s) kick(s);
    for (size_t s = 0; s < inStreams_.size(); ++s) post(s);
    for (;;) {
      land();
      injectDue();
      double next = -1;  // the next landing or injection slot
      for (const Landing& l : landings_) next = next < 0 ? l.when : std::min(next, l.when);
      for (const OutStream& st : out_)
        if (st.injectAt >= 0) next = next < 0 ? st.injectAt : std::min(next, st.injectAt);
      if (acts_.empty() && next < 0) break;
      const double timeout = next < 0 ? -1 : std::max(0.0, next - sg4::Engine::get_clock());
      if (acts_.empty()) {
        sg4::this_actor::sleep_for(timeout);
        continue;
      }
      ssize_t i = sg4::Activity::wait_any_for(acts_, timeout);
      if (i < 0) continue;  // a landing is due
      Tag tag = tags_[size_t(i)];
      acts_[size_t(i)] = acts_.back();
      acts_.pop_back();
      tags_[size_t(i)] = tags_.back();
      tags_.pop_back();
      done(tag);
    }
  }

  void start(sg4::ActivityPtr a, Tag t) {
    acts_.push_back(std::move(a));
    tags_.push_back(t);
  }

  // Hands the fragments whose latency has passed to their flows, in arrival order.
  void land() {
    const double now = sg4::Engine::get_clock();
    size_t kept = 0;
    for (size_t k = 0; k < landings_.size(); ++k) {
      const Landing l = landings_[k];
      if (l.when <= now) {
        arrived(l.item, l.bytes);
      } else {
        landings_[kept++] = l;
      }
    }
    landings_.resize(kept);
  }

  // A fragment of in-item `item` is here: reduce it (at the memory's rate) or
  // pass it on; for a Recv that trails another, once that one has delivered
  // as many bytes.
  void arrived(size_t item, uint64_t n) {
    InItem& r = inItems_[item];
    if (r.trails >= 0) {
      r.waiting += n;
      releaseTrailing(item);
      return;
    }
    process(item, n);
  }

  // Hands on what a trailing Recv has waiting, as far as its leader delivered.
  void releaseTrailing(size_t item) {
    InItem& r = inItems_[item];
    const uint64_t n = std::min(r.waiting, inItems_[size_t(r.trails)].delivered - r.released);
    if (n == 0) return;
    r.waiting -= n;
    r.released += n;
    process(item, n);
  }

  void process(size_t item, uint64_t n) {
    if (inItems_[item].reduce)
      start(sg4::this_actor::exec_async(3.0 * double(n) / in_->memoryGbps), {What::kReduce, item, n});
    else
      deliver(item, n);
  }

  // Sends the next fragment to stream s's peer if one is ready, the link is
  // free, and (to another node, with a gap) the node's injection slot has come.
  void kick(size_t s) {
    OutStream& st = out_[s];
    if (st.inFlight || st.items.empty()) return;
    OutItem& o = outItems_[st.items.front()];
    if (o.avail == o.sent) return;
    if (in_->gapS > 0 && in_->nodeOf[size_t(st.peer)] != in_->nodeOf[size_t(rank_)]) {
      const double now = sg4::Engine::get_clock();
      if (st.injectAt < 0) {
        double& free = in_->injectorFree[size_t(in_->nodeOf[size_t(rank_)])];
        st.injectAt = std::max(now, free);
        free = st.injectAt + in_->gapS;
      }
      if (st.injectAt > now) return;  // the phase's loop comes back at the slot (injectDue)
      st.injectAt = -1;
    }
    const uint64_t packet = o.taperTo   ? fragmentBytes(o.bytes - o.sent, o.taperTo)
                            : o.rampsUp ? rampedFragmentBytes(o.sent)
                                        : kMaxFragment;
    uint64_t n = std::min<uint64_t>(packet, o.avail - o.sent);
    st.inFlight = new Fragment{n};
    if (offNode(st.peer))  // out through node 0's NIC and back in: handed over as it ends (done)
      start(sg4::Comm::sendto_async(in_->hosts[size_t(rank_)], in_->farHosts[size_t(st.peer % in_->perNode)], n),
            {What::kOut, s, 0});
    else
      start(channel(rank_, st.peer)->put_async(st.inFlight, n), {What::kOut, s, 0});
  }

  // Whether `peer` is on another node than node 0, in a symmetric replay.
  bool offNode(int peer) const { return in_->symmetricNodes > 0 && peer >= in_->perNode; }

  // A fragment to another node has crossed node 0's links out and in: it
  // arrives at node 0's rank of the peer's local index, as its mirror's
  // (symmetry.h), at once (the latency is the receiver's to add).
  void handOverMirrored(int peer, Fragment* f) {
    const int L = in_->perNode;
    const int from = mirrorNode(peer / L, in_->symmetricNodes, in_->symmetry) * L + rank_;
    channel(from, peer % L)->put_init(f, 0)->detach();
  }

  // Sends the fragments whose injection slot has come.
  void injectDue() {
    const double now = sg4::Engine::get_clock();
    for (size_t s = 0; s < out_.size(); ++s)
      if (out_[s].injectAt >= 0 && out_[s].injectAt <= now) kick(s);
  }

  // Waits for the next fragment from stream s's peer.
  void post(size_t s) {
    InStream& st = inStreams_[s];
    if (st.posted || st.items.empty()) return;
    st.posted = true;
    start(channel(st.peer, rank_)->get_async<Fragment>(&st.arriving), {What::kIn, s, 0});
  }

  void deliver(size_t item, uint64_t n) {
    inItems_[item].delivered += n;
    for (size_t out : inItems_[item].feeds) {
      outItems_[out].avail += n;
      kick(outOfItem_[out]);
    }
    for (size_t next : inItems_[item].trailedBy) releaseTrailing(next);
  }

  void done(const Tag& t) {
    switch (t.what) {
      case What::kOut: {
        OutStream& st = out_[t.index];
        OutItem& o = outItems_[st.items.front()];
        o.sent += st.inFlight->bytes;
        st.inFlight->transferred = sg4::Engine::get_clock();
        if (offNode(st.peer)) handOverMirrored(st.peer, st.inFlight);
        release(st.inFlight);
        st.inFlight = nullptr;
        if (o.sent == o.bytes) st.items.pop_front();
        kick(t.index);
        break;
      }
      case What::kIn: {
        InStream& st = inStreams_[t.index];
        const double now = sg4::Engine::get_clock();
        const uint64_t n = st.arriving->bytes;
        // Taken now, or later than the transfer ended (then the sender has written when).
        const double transferred = st.arriving->transferred >= 0 ? st.arriving->transferred : now;
        release(st.arriving);
        st.arriving = nullptr;
        st.posted = false;
        // The channel is a byte stream: a fragment may finish one flow and start the next
        // (a sender's flow may be several of the receiver's, or the other way round).
        const double when = transferred + in_->latencyS(st.peer, rank_);
        for (uint64_t left = n; left > 0 && !st.items.empty();) {
          const size_t item = st.items.front();
          InItem& r = inItems_[item];
          const uint64_t take = std::min(left, r.bytes - r.got);
          r.got += take;
          left -= take;
          if (r.got == r.bytes) st.items.pop_front();
          if (when <= now)
            arrived(item, take);
          else
            landings_.push_back({when, item, take});
        }
        post(t.index);
        break;
      }
      case What::kReduce:
        deliver(t.index, t.bytes);
        break;
      case What::kCopy:
        break;
    }
  }

  const int rank_;
  ReplayInput* in_;
  std::vector<double>* finish_;
  std::vector<uint32_t>* phasesDone_;
  std::vector<OutStream> out_;
  std::vector<OutItem> outItems_;
  std::vector<size_t> outOfItem_;  // out item -> its stream
  std::vector<InStream> inStreams_;
  std::vector<InItem> inItems_;
  std::vector<long> inItemOf_;  // a flow of the phase -> its InItem (-1: none)
  std::vector<sg4::ActivityPtr> acts_;
  std::vector<Tag> tags_;
  // A fragment that has crossed the link but not yet the route's latency.
  struct Landing {
    double when;
    size_t item;
    uint64_t bytes;
  };
  std::vector<Landing> landings_;  // in order of arrival, so `when` ascends per in-stream
};

}  // namespace

std::vector<double> replay(ReplayInput& in) {
  std::vector<double> finish(in.plans.size(), -1);
  std::vector<uint32_t> phasesDone(in.plans.size(), 0);
  for (size_t r = 0; r < in.plans.size(); ++r)
    sg4::Actor::create("rank" + std::to_string(r), in.hosts[r], RankActor(int(r), &in, &finish, &phasesDone));
  sg4::Engine::get_instance()->run();
  size_t stuck = 0, first = 0;
  for (size_t r = finish.size(); r-- > 0;)
    if (finish[r] < 0) stuck++, first = r;
  if (stuck)
    throw std::runtime_error(format("the replay stalled: %zu rank%s never finished (rank %zu stopped in phase %u of %zu)",
                                    stuck, stuck == 1 ? "" : "s", first, phasesDone[first] + 1,
                                    in.plans[first].phaseEnd.size()));
  return finish;
}

}  // namespace strata::sim
