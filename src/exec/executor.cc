#include "exec/executor.h"

#include <algorithm>
#include <new>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <cstring>

#include "bootstrap/socket.h"
#include "exec/link_set.h"
#include "exec/phase_wait.h"
#include "core/error.h"
#include "core/log.h"
#include "exec/waiter.h"
#include "kernels/cpu/reduce.h"
#include "kernels/cpu/streaming_copy.h"

namespace strata {

namespace {

constexpr size_t kUnbounded = ~size_t(0);

// A buffer in pieces (fusion) is sent straight from a piece (trySend: no
// staging copy on TCP) when the piece holds at least this much from the
// current byte on; shorter runs are gathered into one packet, so that small
// pieces do not cost a frame and a system call each.
constexpr size_t kDirectRunBytes = 64 * 1024;

// Where a flow's source or destination lies: one pointer, or an offset into a
// buffer made of pieces (fusion), where a step must stop at a piece's end;
// either one range or equal runs `stride` bytes apart (a strided flow), where
// a step must stop at a run's end.
struct Cursor {
  uint8_t* base = nullptr;
  const Segments* pieces = nullptr;
  size_t offset = 0;
  size_t runBytes = 0;  // 0: one contiguous range
  size_t stride = 0;
  bool valid() const { return base || pieces; }
  // Whether a step may have to stop before the flow's end (pieces or runs).
  bool segmented() const { return pieces || runBytes; }
  // Byte `done` of the flow, and how many bytes follow it contiguously.
  uint8_t* at(size_t done, size_t* run) const {
    size_t pos = done, limit = kUnbounded;
    if (runBytes) {
      const size_t within = done % runBytes;
      pos = done / runBytes * stride + within;
      limit = runBytes - within;
    }
    if (!pieces) {
      *run = limit;
      return base ? base + pos : nullptr;
    }
    uint8_t* p = pieces->locate(offset + pos, run);
    *run = std::min(*run, limit);
    return p;
  }
};

// Whether a plain (not fused) call's send buffer lies wholly apart from its
// receive buffer (out of place; or no receive buffer on this rank).
bool sendLiesApart(const Plan& plan, const Buffers& bufs) {
  const auto* send = static_cast<const uint8_t*>(bufs.send);
  const auto* recv = static_cast<const uint8_t*>(bufs.recv);
  return send && (!recv || send + plan.sendExtent <= recv || recv + plan.recvExtent <= send);
}

struct FlowState {
  size_t done = 0;
  // Bytes of a packet sent straight from a piece (trySend) or from several
  // (trySendPieces: framePieces) that the link has not taken yet: the next
  // calls must continue exactly that packet.
  size_t frameLeft = 0;
  size_t landed = 0;  // stepLand: bytes received into dst (done: bytes forwarded)
  bool descSent = false, descChecked = false, finished = false, framePieces = false;
  Cursor src, dst;
};

class PlanRunner {
 public:
  PlanRunner(LinkSet& comm, const Plan& plan, const Buffers& bufs, ExecProbe* probe)
      : comm_(comm), plan_(plan), bufs_(bufs), waiter_(comm, comm.timeoutMs(), probe, plan.ops.empty() ? nullptr : &plan.ops[0]),
        probe_(probe), tracing_(kTracingBuilt && probe && probe->tracing) {
    scratch_ = plan.scratchBytes ? comm.scratch(plan.scratchBytes) : nullptr;
    streamOutput_ = bytesTouched(plan, bufs) >= comm.streamedOutputBytes();
    lendFromSend_ = !bufs.sendPieces && !bufs.recvPieces && sendLiesApart(plan, bufs);
  }

  void run() {
    comm_.connect(plan_.peers);
    for (size_t i = 0; i < plan_.phases.size(); ++i) {
      if (!tracing()) {
        runPhase(plan_.phases[i]);
        continue;
      }
      ExecProbe::PhaseSpan span;
      span.phase = uint32_t(i);
      span.startUs = nowUs();
      int64_t waitBefore = probe_->waitUs;
      kernelUs_ = 0;
      runPhase(plan_.phases[i]);
      span.endUs = nowUs();
      span.waitUs = probe_->waitUs - waitBefore;
      span.kernelUs = kernelUs_;
      probe_->phases.push_back(span);
    }
    drain(plan_.peers);
  }

 private:
  Cursor resolve(Ref r, const Flow& f, size_t stride) const {
    Cursor c;
    if (!r.valid()) return c;
    if (f.runs > 1 && stride != runBytes(f)) {
      c.runBytes = runBytes(f);
      c.stride = stride;
    }
    if (bufs_.p2p) {
      const P2POp& op = (*bufs_.p2p)[r.offset];
      c.base = r.buf == Buf::kSend ? static_cast<uint8_t*>(const_cast<void*>(op.sendbuff))
                                   : static_cast<uint8_t*>(op.recvbuff);
      return c;
    }
    const Segments* pieces = r.buf == Buf::kSend   ? bufs_.sendPieces
                             : r.buf == Buf::kRecv ? bufs_.recvPieces
                                                   : nullptr;
    if (pieces) {
      c.pieces = pieces;
      c.offset = r.offset;
      return c;
    }
    switch (r.buf) {
      case Buf::kSend: c.base = static_cast<uint8_t*>(const_cast<void*>(bufs_.send)) + r.offset; break;
      case Buf::kRecv: c.base = static_cast<uint8_t*>(bufs_.recv) + r.offset; break;
      case Buf::kScratch: c.base = scratch_ + r.offset; break;
      default: break;
    }
    return c;
  }

  void runPhase(const Phase& ph) {
    if (ph.count <= kInlineFlows) {
      states_ = reinterpret_cast<FlowState*>(inlineStorage_);
    } else {
      heapStates_.resize(ph.count);
      states_ = heapStates_.data();
      findPredecessors(ph);
    }
    for (uint32_t i = 0; i < ph.count; ++i) {
      const Flow& f = plan_.flows[ph.first + i];
      // Every field given: stores of these values, not a memset of the whole.
      new (&states_[i]) FlowState{0, 0, 0, false, false, false, false, resolve(f.src, f, f.srcStride),
                                  resolve(f.dst, f, f.dstStride)};
    }
    try {
      progressPhase(ph);
    } catch (const PeerAbort& e) {
      throw PeerAbort(e.code(), format("%s; meanwhile rank %d %s", e.what(), comm_.rank(),
                                       describeWait(ph, waiter_.absenceIsKnown()).text.c_str()));
    }
  }

  void progressPhase(const Phase& ph) {
    uint32_t left = ph.count;
    while (left > 0) {
      bool moved = false;
      for (uint32_t i = 0; i < ph.count; ++i) {
        FlowState& st = states_[i];
        if (st.finished || waitsForEarlierFlow(ph, i)) continue;
        const Flow& f = plan_.flows[ph.first + i];
        moved |= f.kind == FlowKind::kSend ? stepSend(f, st) : stepValue(f, st);
        if (st.done == f.bytes && (!f.sendsDesc || st.descSent) &&
            (!f.expectsDesc || st.descChecked)) {
          st.finished = true;
          --left;
        }
      }
      if (moved) {
        waiter_.progressed();
      } else {
        waiter_.idle([&] { return describeWait(ph); });
      }
    }
  }

  // For a phase of more flows than kInlineFlows (a fan-out inside a node has
  // hundreds): each flow's latest earlier flow to the same peer and from the
  // same peer, found once, so a pass over the flows costs each one two looks
  // instead of a scan of those before it.
  void findPredecessors(const Phase& ph) {
    prevOut_.assign(ph.count, -1);
    prevIn_.assign(ph.count, -1);
    lastOut_.clear();
    lastIn_.clear();
    for (uint32_t i = 0; i < ph.count; ++i) {
      const Flow& f = plan_.flows[ph.first + i];
      if (const int out = outPeerOf(f); out >= 0) {
        auto [it, fresh] = lastOut_.try_emplace(out, int32_t(i));
        if (!fresh) prevOut_[i] = std::exchange(it->second, int32_t(i));
      }
      if (const int in = inPeerOf(f); in >= 0) {
        auto [it, fresh] = lastIn_.try_emplace(in, int32_t(i));
        if (!fresh) prevIn_[i] = std::exchange(it->second, int32_t(i));
      }
    }
  }

  // Flows of one phase that share a peer and direction run in plan order.
  // A flow starts only once its predecessors have finished, so the latest
  // earlier one of each kind having finished means all of them have.
  bool waitsForEarlierFlow(const Phase& ph, uint32_t i) const {
    if (ph.count > kInlineFlows)
      return (prevOut_[i] >= 0 && !states_[prevOut_[i]].finished) ||
             (prevIn_[i] >= 0 && !states_[prevIn_[i]].finished);
    const Flow& f = plan_.flows[ph.first + i];
    int out = outPeerOf(f);
    int in = inPeerOf(f);
    for (uint32_t j = 0; j < i; ++j) {
      if (states_[j].finished) continue;
      const Flow& g = plan_.flows[ph.first + j];
      int gout = outPeerOf(g);
      int gin = inPeerOf(g);
      if ((out >= 0 && out == gout) || (in >= 0 && in == gin)) return true;
    }
    return false;
  }

  // Sends n bytes of flow f lying at p, which is in `from` (the flow's source
  // or destination): lent (trySendStable) where the plan says they stay
  // unchanged (Flow::lends; never in point-to-point plans) and the buffer is
  // not one an in-place call shares, else copied by the link. `lendable`:
  // how many bytes from p on (whole elements, unchanged, contiguous) a
  // lending link may take in one region, so that one slot of the link
  // stands for all of them and the peer reads on without waiting for this
  // rank to lend the next fragment (2 ranks, 16 MiB all-to-all: 2.6 -> 1.9 ms);
  // n for flows whose receivers count on their packet sizes.
  size_t sendBytes(Channel& ch, const Flow& f, Ref from, const uint8_t* p, size_t n, size_t lendable = 0) {
    if (!mayLend(f, from)) return ch.trySend(p, n);
    return ch.trySendStable(p, n, packetSizesCounted(f) ? n : std::max(n, lendable), lendSaving(f));
  }
  // Whether flow f's bytes lying in `from` may be lent (sendBytes).
  bool mayLend(const Flow& f, Ref from) const {
    return f.lends && from.valid() && (from.buf != Buf::kSend || lendFromSend_);
  }
  // A call beyond the cache (streamOutput_) has its plain receivers write
  // their outputs with streaming stores, which the ring's copy out can use
  // and the kernel's copy cannot: its two-copy sends are weighed so
  // (single_copy.h). Judged by the call, the same on both ranks of a link:
  // a receiver that forwards what it gets writes ordinary stores even so.
  LendSaving lendSaving(const Flow& f) const {
    if (f.lendingShared) return LendSaving::kOneCopyShared;
    if (f.lendingSavesOneCopy) return LendSaving::kOneCopy;
    return streamOutput_ ? LendSaving::kTwoCopiesStreamed : LendSaving::kTwoCopies;
  }

  // A tapered or ramped flow: its receivers count on its packet sizes.
  static bool packetSizesCounted(const Flow& f) { return f.taperTo || f.rampsUp; }

  bool pushDesc(Channel& ch, const Flow& f, FlowState& st) {
    Span s = ch.acquireSend(kOpDescBytes);
    if (s.size < kOpDescBytes) return false;
    encodeOpDesc(plan_.ops[f.op], s.data);
    ch.commitSend(kOpDescBytes);
    st.descSent = true;
    return true;
  }

  bool checkDesc(Channel& ch, const Flow& f, FlowState& st) {
    ConstSpan s = ch.peekRecv();
    // All of it, padding too, in one span (a stream link may show a part first).
    if (s.size < kOpDescBytes || s.size < opDescBytes(s.data)) return false;
    checkPeerDescriptor(comm_, plan_.ops[f.op], f.peer, s.data);
    ch.consumeRecv(opDescBytes(s.data));
    st.descChecked = true;
    return true;
  }

  // Whether flow f's bytes in its destination go there with streaming
  // stores: the bytes the call touches here (bytesTouched) are more than
  // this rank's share of the cache (LinkSet::streamedOutputBytes) and
  // nothing reads those bytes again (Flow::writesFinalBytes). Measured on 2
  // ranks of the 2-core VMs: 16 and 64 MiB all-gather, all-to-all and
  // broadcast 9-38% faster, reduce-scatter and reduce 4-10%; 2 MiB outputs,
  // which the cache keeps, 1.1-1.5x slower (docs/ARCHITECTURE.md, "Outputs
  // larger than the cache").
  bool streamsOutput(const Flow& f) const { return streamOutput_ && f.writesFinalBytes; }
  // Copies k plain bytes into f's destination; `lastRead`: this flow reads
  // them no more either (it forwards from elsewhere or not at all).
  void copyOut(const Flow& f, bool lastRead, uint8_t* to, const uint8_t* from, size_t k) const {
    if (lastRead && streamsOutput(f)) kernels::streamingCopy(to, from, k);
    else std::memcpy(to, from, k);
  }
  // Reduces k bytes of local and incoming into f's destination `to`, and
  // divides them where f finishes an Avg (`divides`). With streaming stores
  // where copyOut would stream and `to` is not local (in place, reading the
  // line has brought it into the cache already); the division then happens
  // before the bytes go out, so the output is not read back to divide it.
  void reduceOut(const Flow& f, bool lastRead, bool divides, uint8_t* to, const uint8_t* local,
                 const uint8_t* incoming, size_t k) const {
    const size_t count = k / plan_.elemSize;
    const uint64_t divisor = divides ? uint64_t(plan_.nranks) : 0;
    if (lastRead && streamsOutput(f) && to != local) {
      kernels::reduceStreaming(to, local, incoming, count, plan_.dtype, plan_.redop, divisor);
      return;
    }
    kernels::reduce(to, local, incoming, count, plan_.dtype, plan_.redop);
    if (divisor) kernels::divide(to, to, count, plan_.dtype, divisor);
  }

  // The pieces (sendPieces_) of up to n bytes of a cursor from byte `done`
  // on, at most Channel::kMaxSendPieces of them; returns the bytes they hold.
  size_t piecesOf(const Cursor& c, size_t done, size_t n) {
    sendPieces_.clear();
    sendPieces_.reserve(Channel::kMaxSendPieces);  // once a call, where used
    size_t off = 0;
    while (off < n && sendPieces_.size() < Channel::kMaxSendPieces) {
      size_t run;
      const uint8_t* p = c.at(done + off, &run);
      const size_t k = std::min(run, n - off);
      sendPieces_.push_back(ConstSpan{p, k});
      off += k;
    }
    return off;
  }
  // Cuts sendPieces_ from the end to hold exactly `bytes` (at most what they
  // hold); returns them.
  size_t keepPieceBytes(size_t bytes) {
    size_t held = 0;
    for (size_t i = 0; i < sendPieces_.size(); ++i) {
      if (held + sendPieces_[i].size >= bytes) {
        sendPieces_[i].size = bytes - held;
        sendPieces_.resize(sendPieces_[i].size ? i + 1 : i);
        return bytes;
      }
      held += sendPieces_[i].size;
    }
    return held;
  }
  // Copies n bytes of a cursor from byte `done` on into `out`, piece by piece.
  static void gather(const Cursor& c, size_t done, uint8_t* out, size_t n) {
    for (size_t off = 0; off < n;) {
      size_t run;
      const uint8_t* p = c.at(done + off, &run);
      size_t k = std::min(run, n - off);
      if (p != out + off) std::memcpy(out + off, p, k);
      off += k;
    }
  }
  // Copies n bytes from `in` into a cursor from byte `done` on.
  static void scatter(const Cursor& c, size_t done, const uint8_t* in, size_t n) {
    for (size_t off = 0; off < n;) {
      size_t run;
      uint8_t* p = c.at(done + off, &run);
      size_t k = std::min(run, n - off);
      if (p != in + off) std::memcpy(p, in + off, k);
      off += k;
    }
  }
  // Bytes from `done` up to the last element boundary of the flow within n.
  size_t wholeElements(size_t done, size_t n) const {
    size_t end = (done + n) / plan_.elemSize * plan_.elemSize;
    return end > done ? end - done : 0;
  }

  // Bytes of a flow's source that are there to use: all of them, or as
  // many whole elements as the flow it trails has put in place (Flow::trails).
  size_t readyBytes(const Flow& f) const {
    if (f.trails < 0) return f.bytes;
    const FlowState& filler = states_[f.trails];
    const size_t ready = std::min(f.bytes, std::max(filler.landed, filler.done));
    return ready == f.bytes ? ready : ready / plan_.elemSize * plan_.elemSize;
  }

  // The most a flow's next packet holds: kMaxFragment, less at the end of a
  // tapered flow (Flow::taperTo) and at the start of a ramped one
  // (Flow::rampsUp; both only flows that read no link).
  static size_t packetBytes(const Flow& f, const FlowState& st) {
    if (f.taperTo) return fragmentBytes(f.bytes - st.done, f.taperTo);
    return f.rampsUp ? rampedFragmentBytes(st.done) : kMaxFragment;
  }

  // Whether a flow's descriptor goes in a packet of its own: one that may
  // lend more than a fragment (the descriptor's packet is always copied, so
  // riding in it would copy the first fragment, half of a 2-rank 1 MiB
  // all-gather's block; one small packet more is nothing beside it), to a
  // peer that reads meanwhile (elsewhere plans count on a flow's packets
  // fitting the link: Flow::peerReadsMeanwhile). Not flows whose packet
  // sizes are counted on. A flow of one fragment (up to kMaxFragment) goes
  // alone where the link would lend all of it from `from` at once: riding
  // with the descriptor, a 2-rank all-gather's 128 KiB block went through
  // the ring whatever the single-copy threshold said (256 KiB all-gather,
  // lending forced, 3 alternating rounds: 9.7-13.9 us against 17.6-18.8).
  // `from` / `src`: where the flow's bytes lie (Ref{} for bytes received
  // and relayed, which are never lent) and their first byte.
  bool descGoesAlone(Channel& ch, const Flow& f, Ref from, const Cursor& src) {
    if (!f.peerReadsMeanwhile || packetSizesCounted(f)) return false;
    if (f.bytes > kMaxFragment) return true;
    return mayLend(f, from) && !src.segmented() && src.base && ch.wouldLend(src.base, f.bytes, lendSaving(f));
  }

  // Bytes of a packet that starts with the descriptor, `fits` of `wanted`
  // fitting beside it: cut short, a whole number of cache lines, so that
  // every later fragment starts at the offset into a line that the buffer's
  // first byte has, whatever the descriptor's length (measured with an
  // unpadded 24-byte descriptor and no such cut: every later fragment of a
  // 2-rank 4 MiB broadcast 8 bytes off its buffer's lines, 1.4x as long).
  static size_t besideDesc(size_t fits, size_t wanted) {
    return fits < wanted && fits >= 2 * kLineBytes ? fits - fits % kLineBytes : fits;
  }
  static constexpr size_t kLineBytes = 64;

  // Sends the descriptor together with the first fragment, in one packet
  // (or alone: descGoesAlone).
  bool sendDescAndFirst(Channel& ch, const Flow& f, FlowState& st, size_t ready) {
    if (ready == 0 || descGoesAlone(ch, f, f.src, st.src)) return pushDesc(ch, f, st);
    size_t first = std::min(ready, packetBytes(f, st));
    const size_t prefix = opDescBytesBefore(first);
    Span s = ch.acquireSend(prefix + first);
    if (s.size < prefix) return false;
    size_t n = besideDesc(std::min(first, s.size - prefix), first);
    n -= n % plan_.elemSize;
    encodeOpDesc(plan_.ops[f.op], s.data, prefix == kOpDescPaddedBytes);
    gather(st.src, 0, s.data + prefix, n);
    ch.commitSend(prefix + n);
    st.done = n;
    st.descSent = true;
    return true;
  }

  bool stepSend(const Flow& f, FlowState& st) {
    Channel& ch = comm_.channel(f.peer);
    const size_t ready = readyBytes(f);
    bool moved = false;
    if (f.sendsDesc && !st.descSent) {
      if (!sendDescAndFirst(ch, f, st, ready)) return false;
      moved = true;
    }
    while (st.done < ready) {
      size_t want = std::min(ready - st.done, packetBytes(f, st));
      size_t n;
      size_t run = kUnbounded;
      const uint8_t* at = st.src.segmented() ? st.src.at(st.done, &run) : st.src.base + st.done;
      if (!st.src.segmented()) {
        n = sendBytes(ch, f, f.src, at, want, ready - st.done);
      } else if (st.frameLeft ? st.framePieces : run < std::min(want, kDirectRunBytes) && ch.sendsFromPieces()) {
        // Short pieces on a link that writes a packet straight from them
        // (TCP: one sendmsg, no copy into staging); a packet continued takes
        // exactly the bytes it has left.
        const size_t len = st.frameLeft ? piecesOf(st.src, st.done, st.frameLeft)
                                        : keepPieceBytes(wholeElements(st.done, piecesOf(st.src, st.done, want)));
        n = len ? ch.trySendPieces(sendPieces_.data(), sendPieces_.size()) : 0;
        st.frameLeft = len - n;
        st.framePieces = st.frameLeft > 0;
      } else if (st.frameLeft || run >= std::min(want, kDirectRunBytes)) {
        // One piece holds this packet's bytes (a packet never spans pieces:
        // trySend may take it over several calls, each continuing it).
        size_t len = st.frameLeft ? st.frameLeft : wholeElements(st.done, std::min(want, run));
        n = len ? sendBytes(ch, f, f.src, at, len) : 0;
        st.frameLeft = len - n;
      } else {
        // The source is in pieces: gather them into one packet, so a fused
        // buffer of small pieces does not use up a link's packet slots
        // (trySend streams one packet over several calls, and a packet must
        // not change paths halfway).
        Span s = ch.acquireSend(want);
        n = wholeElements(st.done, std::min(want, s.size));
        if (n) {
          gather(st.src, st.done, s.data, n);
          ch.commitSend(n);
        }
      }
      if (n == 0) break;
      st.done += n;
      moved = true;
    }
    return moved;
  }

  // Recv and Copy flows: value = incoming [op src] or src; to dst and/or forward.
  bool stepValue(const Flow& f, FlowState& st) {
    Channel* in = f.kind == FlowKind::kRecv ? &comm_.channel(f.peer) : nullptr;
    Channel* out = f.forwardPeer >= 0 ? &comm_.channel(f.forwardPeer) : nullptr;
    bool moved = false;
    if (in && f.expectsDesc && !st.descChecked) {
      if (!checkDesc(*in, f, st)) return false;
      moved = true;
    }
    const bool plainData = !f.reduce && !(f.finalize && plan_.redop == strataAvg) && f.trails < 0;
    if (out && f.sendsDesc && !st.descSent && (f.bytes == 0 || (plainData && descGoesAlone(*out, f, in ? Ref{} : f.src, st.src)))) {
      if (!pushDesc(*out, f, st)) return moved;
      moved = true;
    }
    if (in && plainData && st.dst.base && !st.dst.segmented() && (!out || !f.sendsDesc || st.descSent))
      return stepLand(f, st, *in, out) || moved;
    if (out && plainData && (!f.sendsDesc || st.descSent))
      return stepForward(f, st, in, *out) || moved;
    const size_t elem = plan_.elemSize;
    // The descriptor rides in front of the first forwarded fragment.
    bool descFirst = out && f.sendsDesc && !st.descSent;
    const size_t ready = readyBytes(f);
    while (st.done < ready) {
      size_t n = std::min(ready - st.done, packetBytes(f, st));
      const uint8_t* incoming = nullptr;
      if (in) {
        ConstSpan s = in->peekRecv();
        incoming = s.data;
        n = std::min(n, s.size);
      }
      const size_t prefix = descFirst ? opDescBytesBefore(n) : 0;
      Span space;
      if (out) {
        space = out->acquireSend(prefix + n);
        if (space.size < prefix) break;
        n = prefix ? besideDesc(std::min(n, space.size - prefix), n) : std::min(n, space.size);
      }
      n -= n % elem;
      if (n == 0) break;
      if (!st.dst.valid() && !out) {  // nothing to write: an in-place copy onto itself
        st.done = f.bytes;
        return true;
      }
      uint8_t* fwd = out ? space.data + prefix : nullptr;
      int64_t kernelStart = tracing() ? nowUs() : 0;
      // One fragment; local and dst may be in pieces (fusion), so it is
      // processed run by run while incoming and fwd stay one packet each.
      for (size_t off = 0; off < n;) {
        size_t srcRun = kUnbounded, dstRun = kUnbounded;
        const uint8_t* local = st.src.valid() ? st.src.at(st.done + off, &srcRun) : nullptr;
        uint8_t* dst = st.dst.valid() ? st.dst.at(st.done + off, &dstRun) : nullptr;
        size_t k = std::min({n - off, srcRun, dstRun});
        uint8_t* target = dst ? dst : fwd + off;
        // Streamed only where nothing reads it next: no forward; a copy
        // also no division after it (a reduction divides before it stores).
        const bool divides = f.finalize && plan_.redop == strataAvg;
        if (in && f.reduce) {
          reduceOut(f, dst && !out, divides, target, local, incoming + off, k);
        } else {
          const uint8_t* from = in ? incoming + off : local;
          if (target != from) copyOut(f, dst && !out && !divides, target, from, k);
          if (divides) kernels::divide(target, target, k / elem, plan_.dtype, uint64_t(plan_.nranks));
        }
        if (out && target != fwd + off) std::memcpy(fwd + off, target, k);
        off += k;
      }
      if (tracing()) {
        int64_t kernelEnd = nowUs();
        kernelUs_ += kernelEnd - kernelStart;
        probe_->addKernel(kernelStart, kernelEnd);
      }
      if (out) {
        if (prefix) encodeOpDesc(plan_.ops[f.op], space.data, prefix == kOpDescPaddedBytes);
        out->commitSend(prefix + n);
        st.descSent = true;
        descFirst = false;
      }
      if (in) in->consumeRecv(n);
      st.done += n;
      moved = true;
    }
    return moved;
  }

  // Plain data received into one contiguous destination: it lands there
  // straight from the link (tryRecvInto: over shm single copy, from the
  // sender's own buffer) and, with a forward peer, goes on from there
  // (trySendStable: the next rank may read it from this rank's buffer).
  // st.landed counts the bytes in dst, st.done the bytes forwarded.
  bool stepLand(const Flow& f, FlowState& st, Channel& in, Channel* out) {
    bool moved = false;
    st.landed = std::max(st.landed, st.done);  // the first fragment went with the descriptor, landed and forwarded
    for (;;) {
      // Forward the whole elements landed so far (a stream link may deliver
      // part of one); then receive more.
      const size_t n = out ? wholeElements(st.done, std::min(st.landed - st.done, kMaxFragment)) : 0;
      if (n > 0) {
        const size_t sent = sendBytes(*out, f, f.dst, st.dst.base + st.done, n,
                                      wholeElements(st.done, st.landed - st.done));
        st.done += sent;
        moved |= sent > 0;
        if (sent < n) break;  // the link is full
        continue;
      }
      if (st.landed == f.bytes) break;
      // A large lent region the sender helps to read lands whole.
      size_t got = !out && f.bytes - st.landed >= kSharedReadMinBytes
                       ? in.tryRecvShared(st.dst.base + st.landed, f.bytes - st.landed)
                       : 0;
      if (!got)
        got = in.tryRecvInto(st.dst.base + st.landed, std::min(f.bytes - st.landed, kMaxFragment),
                             !out && streamsOutput(f));
      if (got == 0) break;
      st.landed += got;
      if (!out) st.done = st.landed;
      moved = true;
    }
    return moved;
  }

  // A value that is plain data (no reduction) is forwarded with trySend from
  // where it already lies (the source, or dst after the copy), so a TCP link
  // sends it without a staging copy. Only what the link took is consumed.
  bool stepForward(const Flow& f, FlowState& st, Channel* in, Channel& out) {
    bool moved = false;
    while (st.done < f.bytes) {
      size_t n = std::min(f.bytes - st.done, packetBytes(f, st));
      const uint8_t* from = nullptr;
      if (in) {
        ConstSpan s = in->peekRecv();
        n = std::min(n, s.size);
        from = s.data;
      } else if (st.src.base && !st.src.segmented()) {
        from = st.src.base + st.done;
      }
      // Packets are whole elements (a reducing receiver never consumes a
      // partial one): end this piece on an element boundary of the flow.
      // A frame the link took only in part is then still completed, since
      // the boundary lies past its end.
      n = wholeElements(st.done, n);
      if (n == 0) break;
      const bool localPieces = !in && st.src.segmented();
      size_t srcRun = kUnbounded;
      if (localPieces) from = st.src.at(st.done, &srcRun);
      if (localPieces && !st.frameLeft && srcRun < std::min(n, kDirectRunBytes)) {
        // A local source in short pieces (fusion): gather them into one packet.
        Span sp = out.acquireSend(n);
        n = wholeElements(st.done, std::min(n, sp.size));
        if (n == 0) break;
        gather(st.src, st.done, sp.data, n);
        if (st.dst.valid()) scatter(st.dst, st.done, sp.data, n);
        out.commitSend(n);
        st.done += n;
        moved = true;
        continue;
      }
      if (localPieces) {  // straight from the piece, continuing a packet it began
        n = st.frameLeft ? st.frameLeft : wholeElements(st.done, std::min(n, srcRun));
        if (n == 0) break;
      }
      // Lent only from this rank's buffers (not the incoming link's memory,
      // released as it is consumed): the source, or dst after the copy.
      Ref lentFrom = in ? Ref{} : f.src;
      uint8_t* copyAfterSend = nullptr;
      // How far a lending link may take this flow's source in one region:
      // the rest of it where nothing else is done with it first.
      size_t lendable = !in && !localPieces && !st.dst.valid() ? f.bytes - st.done : n;
      if (st.dst.valid()) {
        size_t dstRun;
        uint8_t* dst = st.dst.at(st.done, &dstRun);
        if (dstRun >= n && !in && !localPieces) {
          // A local source sent on (an out-of-place block): sent from where
          // it lies first, then copied into place, so that a peer reading
          // what this rank lent reads while this rank copies, not after.
          if (dst != from) copyAfterSend = dst;
          lendable = wholeElements(st.done, std::min(f.bytes - st.done, dstRun));
        } else if (dstRun >= n) {
          if (dst != from) std::memcpy(dst, from, n);
          from = dst;
          lentFrom = f.dst;
        } else {
          scatter(st.dst, st.done, from, n);
        }
      }
      size_t sent;
      if (copyAfterSend && streamsOutput(f) && !(mayLend(f, lentFrom) && out.wouldLend(from, n, lendSaving(f)))) {
        // Copied through the link and streamed into place: one pass over
        // the source (trySendCopying). Into an output in the cache two
        // passes cost less (kernels/cpu/dual_copy.h).
        sent = out.trySendCopying(from, n, copyAfterSend);
        copyAfterSend = nullptr;
      } else {
        sent = sendBytes(out, f, lentFrom, from, n, lendable);
      }
      if (localPieces) st.frameLeft = n - sent;
      if (sent == 0) break;
      if (copyAfterSend) copyOut(f, true, copyAfterSend, from, sent);
      if (in) in->consumeRecv(sent);
      st.done += sent;
      moved = true;
    }
    return moved;
  }

  void drain(const std::vector<int>& peers) {
    for (int p : peers) {
      if (p == comm_.rank()) continue;
      Channel& ch = comm_.channel(p);
      while (ch.sendPending()) {
        if (ch.progress()) {
          waiter_.progressed();
        } else {
          waiter_.idle([&] {
            return WaitState{format("was sending the last bytes to rank %d", p), false};
          });
        }
      }
      // Bytes lent to the peer (shm single copy) are the caller's again only
      // once it has read them.
      while (ch.sendBuffersLent()) {
        waiter_.idle([&] {
          return WaitState{format("was waiting for rank %d to read the bytes this rank lent it (single copy)", p), false};
        });
      }
    }
  }

  // What this rank waits for in phase `ph` (phase_wait.h).
  WaitState describeWait(const Phase& ph, bool absenceIsKnown = true) const {
    return describePhaseWait(comm_, plan_, ph, [&](uint32_t i) {
      return FlowProgress{states_[i].finished, states_[i].done};
    }, absenceIsKnown);
  }

  LinkSet& comm_;
  const Plan& plan_;
  const Buffers& bufs_;
  Waiter waiter_;
  ExecProbe* probe_;
  const bool tracing_;
  // Whether flows may lend from the send buffer: not in place (the plan's
  // lending analysis keeps the send and receive buffers apart), not in
  // pieces (fusion: they may alias).
  bool lendFromSend_ = false;
  // The bytes the call touches on this rank (its output, and its input where
  // that lies apart) come to more than its share of the cache
  // (LinkSet::streamedOutputBytes).
  bool streamOutput_ = false;
  bool tracing() const { return kTracingBuilt && tracing_; }
  int64_t kernelUs_ = 0;  // reduce / copy time of the current phase (tracing)
  uint8_t* scratch_ = nullptr;
  // The states of the current phase's flows: inline for up to kInlineFlows
  // (the steady state allocates nothing), made in place as each phase starts
  // (not zeroed all together when the runner is made: a small collective
  // would pay for 8; nor zeroed and then assigned, which compilers turn into
  // a `rep stos` whose start-up cost dominates for a flow or two), on the
  // heap beyond that.
  static constexpr uint32_t kInlineFlows = 8;
  static_assert(std::is_trivially_destructible_v<FlowState>, "states are never destroyed");
  alignas(FlowState) unsigned char inlineStorage_[sizeof(FlowState) * kInlineFlows];
  std::vector<FlowState> heapStates_;
  FlowState* states_ = nullptr;
  std::vector<ConstSpan> sendPieces_;  // piecesOf's answer (nothing allocated until used)
  // findPredecessors' answers for the current phase, and its working maps.
  std::vector<int32_t> prevOut_, prevIn_;
  std::unordered_map<int, int32_t> lastOut_, lastIn_;
};

}  // namespace

size_t bytesTouched(const Plan& plan, const Buffers& bufs) {
  const bool fused = bufs.sendPieces || bufs.recvPieces;
  const bool apart = fused ? bufs.sendPieces && bufs.sendPieces != bufs.recvPieces : sendLiesApart(plan, bufs);
  return plan.recvExtent + (apart ? plan.sendExtent : 0);
}

void executePlan(LinkSet& comm, const Plan& plan, const Buffers& buffers, ExecProbe* probe) {
  PlanRunner(comm, plan, buffers, probe).run();
}

}  // namespace strata
