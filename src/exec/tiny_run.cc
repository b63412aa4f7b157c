#include "exec/tiny_run.h"

#include <cstring>
#include <optional>
#include <vector>

#include "core/error.h"
#include "exec/link_set.h"
#include "exec/phase_wait.h"
#include "exec/waiter.h"
#include "kernels/cpu/reduce.h"

namespace strata {

namespace {

constexpr uint32_t kMaxTinyPhaseFlows = 32;

bool overShm(Channel& ch) { return std::strcmp(ch.transportName(), "shm") == 0; }

// The flows of phase `ph` that flow `i` must follow.
uint32_t predecessors(const Plan& plan, const Phase& ph, uint32_t i) {
  const Flow& f = plan.flows[ph.first + i];
  uint32_t after = f.trails >= 0 ? uint32_t(1) << f.trails : 0;
  for (uint32_t j = 0; j < i; ++j) {
    const Flow& g = plan.flows[ph.first + j];
    if ((outPeerOf(f) >= 0 && outPeerOf(f) == outPeerOf(g)) || (inPeerOf(f) >= 0 && inPeerOf(f) == inPeerOf(g)))
      after |= uint32_t(1) << j;
  }
  return after;
}

// One call of a tiny plan. Per flow of the current phase: whether the
// descriptor was checked / sent, and the bytes done (a general sender may
// cut a message into several packets; a tiny one never does).
class TinyRun {
 public:
  TinyRun(LinkSet& links, const TinyPlan& tiny, const Plan& plan, const Buffers& bufs, ExecProbe* probe)
      : links_(links), tiny_(tiny), plan_(plan), probe_(probe) {
    std::memcpy(desc_, tiny.desc, kOpDescBytes);
    std::memcpy(paddedDesc_, tiny.paddedDesc, kOpDescPaddedBytes);
    const uint32_t seq = uint32_t(plan.ops[0].seq);  // its low 32 bits, as encodeOpDesc sends it
    std::memcpy(desc_ + kOpDescSeqOffset, &seq, sizeof seq);
    std::memcpy(paddedDesc_ + kOpDescSeqOffset, &seq, sizeof seq);
    base_[size_t(Buf::kSend)] = static_cast<uint8_t*>(const_cast<void*>(bufs.send));
    base_[size_t(Buf::kRecv)] = static_cast<uint8_t*>(bufs.recv);
    base_[size_t(Buf::kScratch)] = plan.scratchBytes ? links.scratch(plan.scratchBytes) : nullptr;
  }

  void run() {
    const TinyFlow* flows = tiny_.flows.data();
    for (const Phase& ph : plan_.phases) {
      try {
        runPhase(ph, flows);
      } catch (const PeerAbort& e) {
        throw PeerAbort(e.code(), format("%s; meanwhile rank %d %s", e.what(), links_.rank(),
                                         describe(ph, waiter_ && waiter_->absenceIsKnown()).text.c_str()));
      }
      flows += ph.count;
    }
  }

 private:
  void runPhase(const Phase& ph, const TinyFlow* flows) {
    pending_ = ph.count == kMaxTinyPhaseFlows ? ~uint32_t(0) : (uint32_t(1) << ph.count) - 1;
    descChecked_ = descSent_ = started_ = 0;
    while (pending_) {
      bool moved = false;
      for (uint32_t left = pending_; left; left &= left - 1) {
        const uint32_t i = uint32_t(__builtin_ctz(left));
        const TinyFlow& f = flows[i];
        if (f.after & pending_) continue;
        if (f.kind == FlowKind::kSend) {
          moved |= send(f, i);
          continue;
        }
        const Whole whole = f.receivesWhole && !has(descChecked_, i) ? receiveWhole(f, i) : Whole::kNotSo;
        moved |= whole == Whole::kDone || (whole == Whole::kNotSo && value(f, i));
      }
      if (moved) {
        if (waiter_) waiter_->progressed();
        continue;
      }
      if (!waiter_) waiter_.emplace(links_, links_.timeoutMs(), probe_, &plan_.ops[0]);
      waiter_->idle([&] { return describe(ph, true); });
    }
  }

  uint8_t* at(Ref r) const { return r.valid() ? base_[size_t(r.buf)] + r.offset : nullptr; }
  void finish(uint32_t i) { pending_ &= ~(uint32_t(1) << i); }
  static bool has(uint32_t mask, uint32_t i) { return mask >> i & 1; }

  // Space for a whole packet of `bytes`, or an empty span while the link is full.
  static Span acquire(Channel& ch, size_t bytes) {
    Span s = ch.acquireSend(bytes);
    if (s.size && s.size < bytes)
      fail(strataInternalError, "a shm link's packets hold %zu bytes, fewer than a tiny packet's %zu",
           s.size, bytes);
    return s;
  }

  // Whether `bytes` (kOpDescBytes or kOpDescPaddedBytes) of two descriptors
  // match: compared in line, each length a constant.
  static bool sameDescriptor(const uint8_t* a, const uint8_t* b, size_t bytes) {
    return bytes == kOpDescBytes ? std::memcmp(a, b, kOpDescBytes) == 0 : std::memcmp(a, b, kOpDescPaddedBytes) == 0;
  }

  // Copies `bytes` (kOpDescBytes or kOpDescPaddedBytes) of a descriptor, in line.
  static void copyDescriptor(uint8_t* to, const uint8_t* from, size_t bytes) {
    if (bytes == kOpDescBytes) std::memcpy(to, from, kOpDescBytes);
    else std::memcpy(to, from, kOpDescPaddedBytes);
  }

  // The descriptor in front of a flow's `bytes`, opDescBytesBefore(bytes) long.
  const uint8_t* descBefore(size_t bytes) const {
    return opDescBytesBefore(bytes) == kOpDescPaddedBytes ? paddedDesc_ : desc_;
  }

  // The descriptor and the source, as one packet.
  bool send(const TinyFlow& f, uint32_t i) {
    const size_t prefix = f.sendsDesc ? opDescBytesBefore(f.bytes) : 0;
    if (prefix + f.bytes > 0) {
      Span s = acquire(*f.out, prefix + f.bytes);
      if (!s.size) return false;
      if (prefix) copyDescriptor(s.data, descBefore(f.bytes), prefix);
      std::memcpy(s.data + prefix, at(f.src), f.bytes);
      f.out->commitSend(prefix + f.bytes);
    }
    finish(i);
    return true;
  }

  // receiveWhole's outcomes: the flow is done; its link has no descriptor
  // yet; or its packet is not that case (value() takes the flow).
  enum class Whole { kDone, kNothingYet, kNotSo };

  // A Recv into its destination and on to no link (TinyFlow::receivesWhole)
  // whose packet holds the descriptor expected and all of the values: a
  // tiny sender's, the common case. One peek, the comparison, the copy or
  // reduction, one consume; none of value()'s bookkeeping for packets cut
  // in pieces, forwards or descriptors of the other form. Its copy or
  // reduction is value()'s without the cases it cannot have (no values
  // from the source alone, a destination never the packet): sharing
  // value()'s measured 3-10% slower for 8-128 B broadcasts.
  Whole receiveWhole(const TinyFlow& f, uint32_t i) {
    ConstSpan s = f.in->peekRecv();
    if (s.size < kOpDescBytes) return Whole::kNothingYet;
    const size_t expected = opDescBytesBefore(f.bytes);
    if (s.size < expected + f.bytes || !sameDescriptor(s.data, descBefore(f.bytes), expected)) return Whole::kNotSo;
    links_.noteArrival(f.peer, plan_.ops[0]);
    uint8_t* dst = at(f.dst);
    const uint8_t* incoming = s.data + expected;
    const size_t elems = f.bytes / plan_.elemSize;
    if (f.reduce) kernels::reduce(dst, at(f.src), incoming, elems, plan_.dtype, plan_.redop);
    else std::memcpy(dst, incoming, f.bytes);
    if (f.divides) kernels::divide(dst, dst, elems, plan_.dtype, uint64_t(plan_.nranks));
    f.in->consumeRecv(expected + f.bytes);
    finish(i);
    return Whole::kDone;
  }

  // A Recv or Copy: value = incoming [op src] or src, into dst and / or on
  // to the forward link (with the descriptor in front where it starts it).
  bool value(const TinyFlow& f, uint32_t i) {
    bool moved = false;
    if (f.in && f.expectsDesc && !has(descChecked_, i)) {
      ConstSpan s = f.in->peekRecv();
      if (s.size < kOpDescBytes) return false;
      // The length consumed is a constant where the descriptor is the one
      // expected: the reads of the values then go out on the prediction,
      // not after the descriptor's line (where it came from the data, the
      // 2-rank 128-512 B all-reduces took 6-10% longer).
      const size_t expected = opDescBytesBefore(f.bytes);
      if (s.size >= expected && sameDescriptor(s.data, descBefore(f.bytes), expected)) {
        links_.noteArrival(f.peer, plan_.ops[0]);
        // A tiny sender's packet: the values follow in it, read from this
        // peek and consumed with the descriptor (one consume, not two). Only
        // for a flow that forwards nothing: nothing can then stop it before
        // it consumes them (below).
        if (!f.out && f.bytes && s.size - expected >= f.bytes) valuesAfterDesc_ = {s.data + expected, expected};
        else f.in->consumeRecv(expected);
      } else {  // fields a match may differ in, the other form (a general sender's), or a mismatch
        checkPeerDescriptor(links_, plan_.ops[0], f.peer, s.data);
        const size_t bytes = opDescBytes(s.data);
        if (s.size < bytes)  // a shm packet holds its whole descriptor: a peer's fault
          fail(strataRemoteError, "rank %d sent a %zu-byte operation descriptor in a %zu-byte packet", f.peer,
               bytes, s.size);
        f.in->consumeRecv(bytes);
      }
      descChecked_ |= uint32_t(1) << i;
      moved = true;
    }
    const size_t elem = plan_.elemSize;
    // done_[i] is set when the flow first gets here, not zeroed for the
    // whole phase: memset's wide or masked stores stall the first load of
    // an entry (store forwarding fails), measured a fifth of a one-rank call.
    size_t& done = done_[i];
    if (!has(started_, i)) {
      done = 0;
      started_ |= uint32_t(1) << i;
    }
    do {
      const uint8_t* incoming = nullptr;
      size_t n = f.bytes - done;
      size_t descBytes = 0;  // the descriptor's, still to be consumed with the values
      if (f.in && n && valuesAfterDesc_.data) {
        incoming = valuesAfterDesc_.data;
        descBytes = valuesAfterDesc_.size;
        valuesAfterDesc_ = {};
      } else if (f.in && n) {
        ConstSpan s = f.in->peekRecv();
        incoming = s.data;
        n = std::min(n, s.size) / elem * elem;
        if (!n) return moved;
      }
      const size_t prefix = f.out && f.sendsDesc && !has(descSent_, i) ? opDescBytesBefore(f.bytes) : 0;
      Span space;
      if (f.out && prefix + n) {
        space = acquire(*f.out, prefix + n);
        if (!space.size) return moved;
      }
      uint8_t* dst = f.dst.valid() ? at(f.dst) + done : nullptr;
      uint8_t* fwd = space.data ? space.data + prefix : nullptr;
      uint8_t* target = dst ? dst : fwd;
      const uint8_t* local = f.src.valid() ? at(f.src) + done : nullptr;
      if (target && n) {
        if (f.reduce) {
          kernels::reduce(target, local, incoming, n / elem, plan_.dtype, plan_.redop);
        } else {
          const uint8_t* from = incoming ? incoming : local;
          if (target != from) std::memcpy(target, from, n);
        }
        if (f.divides) kernels::divide(target, target, n / elem, plan_.dtype, uint64_t(plan_.nranks));
        if (fwd && target != fwd) std::memcpy(fwd, target, n);
      }
      if (f.out && prefix + n) {
        if (prefix) copyDescriptor(space.data, descBefore(f.bytes), prefix);
        f.out->commitSend(prefix + n);
        descSent_ |= uint32_t(1) << i;
      }
      if (f.in && n) f.in->consumeRecv(descBytes + n);
      done += n;
      moved = true;
    } while (done < f.bytes);
    finish(i);
    return true;
  }

  WaitState describe(const Phase& ph, bool absenceIsKnown) {
    return describePhaseWait(links_, plan_, ph, [&](uint32_t i) {
      return FlowProgress{!has(pending_, i), has(started_, i) ? done_[i] : 0};
    }, absenceIsKnown);
  }

  LinkSet& links_;
  const TinyPlan& tiny_;
  const Plan& plan_;
  ExecProbe* probe_;
  std::optional<Waiter> waiter_;  // made at the first wait
  uint8_t desc_[kOpDescBytes], paddedDesc_[kOpDescPaddedBytes];
  uint8_t* base_[4] = {nullptr, nullptr, nullptr, nullptr};  // by Buf
  uint32_t pending_ = 0;   // flows of the phase not finished
  uint32_t descChecked_ = 0;  // flows that checked the descriptor they receive
  uint32_t descSent_ = 0;     // flows that sent the descriptor in front of what they forward
  uint32_t started_ = 0;      // flows whose done_ entry is set
  size_t done_[kMaxTinyPhaseFlows];  // bytes received / forwarded
  // Set by the descriptor check of a packet that holds all of the flow's
  // values: where they start, and (size) the descriptor's bytes not yet
  // consumed. Taken by the same flow's values at once.
  ConstSpan valuesAfterDesc_{};
};

}  // namespace

uint32_t nextTinyTimeWeight(TinyPlan& tiny, bool timedAnyway) {
  if (!timedAnyway && tiny.untimedLeft > 0) {
    --tiny.untimedLeft;
    ++tiny.untimedRun;
    return 0;
  }
  const uint32_t weight = 1 + tiny.untimedRun;
  tiny.untimedRun = 0;
  tiny.untimedLeft = kTinyTimedEvery - 1;
  return weight;
}

std::shared_ptr<TinyPlan> compileTinyPlan(LinkSet& links, const Plan& plan) {
  if (plan.ops.size() != 1 || plan.ops[0].fusedTensors || plan.ops[0].layout) return nullptr;
  auto tiny = std::make_shared<TinyPlan>();
  for (const Phase& ph : plan.phases) {
    if (ph.count > kMaxTinyPhaseFlows) return nullptr;
    for (uint32_t i = 0; i < ph.count; ++i) {
      const Flow& f = plan.flows[ph.first + i];
      const int outPeer = outPeerOf(f), inPeer = inPeerOf(f);
      const bool desc = (outPeer >= 0 && f.sendsDesc) || (inPeer >= 0 && f.expectsDesc);
      if (f.runs > 1 || f.bytes + (desc ? opDescBytesBefore(f.bytes) : 0) > kTinyPacketBytes) return nullptr;
      if (f.kind == FlowKind::kRecv && !f.dst.valid() && outPeer < 0) return nullptr;
      TinyFlow t;
      for (int peer : {outPeer, inPeer}) {
        if (peer < 0) continue;
        if (peer == links.rank() || !overShm(links.channel(peer))) return nullptr;
      }
      t.kind = f.kind;
      t.reduce = f.kind == FlowKind::kRecv && f.reduce;
      t.divides = f.finalize && plan.redop == strataAvg;
      t.sendsDesc = f.sendsDesc;
      t.expectsDesc = f.expectsDesc;
      t.peer = f.peer;
      t.in = inPeer >= 0 ? &links.channel(inPeer) : nullptr;
      t.out = outPeer >= 0 ? &links.channel(outPeer) : nullptr;
      t.src = f.src;
      t.dst = f.dst;
      t.bytes = f.bytes;
      t.after = predecessors(plan, ph, i);
      t.receivesWhole = t.kind == FlowKind::kRecv && t.in && !t.out && t.expectsDesc && t.dst.valid() && t.bytes;
      tiny->flows.push_back(t);
    }
  }
  OpDesc d = plan.ops[0];
  d.seq = 0;
  encodeOpDesc(d, tiny->desc);
  encodeOpDesc(d, tiny->paddedDesc, true);
  return tiny;
}

void runTinyPlan(LinkSet& links, const TinyPlan& tiny, const Plan& plan, const Buffers& buffers,
                 ExecProbe* probe) {
  TinyRun(links, tiny, plan, buffers, probe).run();
}

}  // namespace strata
