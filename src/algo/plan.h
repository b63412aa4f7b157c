// A Plan is what one rank does for one operation, independent of transports:
// a sequence of phases; each phase is a set of flows that progress together
// (so a send and a receive with the same partner never deadlock); a phase
// starts when the previous one has finished on this rank.
//
// A flow moves `bytes` bytes, fragment by fragment, so that receiving,
// reducing and forwarding overlap:
//   Send : the bytes of `src` go to `peer`.
//   Recv : value = (bytes from `peer`) [reduce: op `src`]; value lands in
//          `dst` (optional) and streams on to `forwardPeer` (optional).
//   Copy : value = `src`; lands in `dst` and/or streams to `forwardPeer`.
// A Send, or a reducing Recv, may trail another flow of its phase (`trails`):
// it uses only the bytes that flow has already put in its destination, which
// is this flow's source, so one received stream fans out to several peers as
// it arrives (a Recv forwards to one peer at most), and several peers'
// contributions are summed into one place one after the other as they come.
// `finalize` applies the op's finishing step (Avg: divide by nranks) to the
// value. A flow's bytes may lie in `runs` equal runs spaced `srcStride` /
// `dstStride` bytes apart (a strided region, as an MPI vector type: the
// blocks of one column of a rank-major buffer); on the wire they are one
// stream. Plans are built by the algorithm files (one per algorithm) and can
// be executed in memory by tests (tests/unit/plan_simulator) without processes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "strata/strata.h"

namespace strata {

class Topology;
struct TinyPlan;

// Bytes the executor handles per step of a flow: received, reduced and
// forwarded as one piece, so a forward starts after the first fragment (the
// cost model's cut-through, strata-sim's replay).
constexpr size_t kMaxFragment = 256 * 1024;

// A tapered flow's (Flow::taperTo) last packets get smaller, each about half
// of what is left, down to its taper size: its receiver sends on what lands
// only after a packet landed whole, so the part of that work that waits for
// the flow's end is its last packet's. Sizes stay multiples of the taper
// size (a power of two of at least kMinTailFragment, so a multiple of every
// element size), but for the last.
constexpr size_t kTailFragment = 32 * 1024;
constexpr size_t kMinTailFragment = 4 * 1024;

// The taper size for the sends of a step whose receivers take `partners`
// messages at once: their last packets all land as the step ends (the
// messages share the links), so they are cut to keep about kTailFragment
// landing then in all, but no smaller than kMinTailFragment.
constexpr size_t tailFragmentFor(size_t partners) {
  size_t tail = kTailFragment;
  while (tail > kMinTailFragment && tail * partners > kTailFragment) tail /= 2;
  return tail;
}

// The size of a tapered flow's next packet when `left` bytes are still to
// go, tapering down to `tail` (a power of two, kMinTailFragment..kMaxFragment).
constexpr size_t fragmentBytes(size_t left, size_t tail) {
  if (left <= tail) return left;
  const size_t half = left / 2 / tail * tail;
  return half < tail ? tail : half > kMaxFragment ? kMaxFragment : half;
}

// How many packets a tapered flow of `bytes` takes (fragmentBytes, one after the other).
constexpr size_t fragmentCount(size_t bytes, size_t tail) {
  size_t packets = bytes > 2 * kMaxFragment ? (bytes - kMaxFragment) / kMaxFragment - 1 : 0;
  for (size_t left = bytes - packets * kMaxFragment; left > 0; left -= fragmentBytes(left, tail)) ++packets;
  return packets;
}

// A ramped flow's (Flow::rampsUp) first packets are smaller: kTailFragment,
// then each as large as all before it, up to kMaxFragment. Its receiver sums
// it and sends the sum on (node_fanin.h), so what waits for the first packet
// is a small one's way, not a whole one's.
constexpr size_t rampedFragmentBytes(size_t done) {
  return done < kTailFragment ? kTailFragment : done > kMaxFragment ? kMaxFragment : done;
}

// How many packets a ramped flow of `bytes` takes.
constexpr size_t rampedFragmentCount(size_t bytes) {
  size_t packets = 0;
  for (size_t done = 0; done < bytes; done += rampedFragmentBytes(done)) ++packets;
  return packets;
}

enum class Buf : uint8_t { kNone = 0, kSend, kRecv, kScratch };

struct Ref {
  Buf buf = Buf::kNone;
  size_t offset = 0;  // bytes
  bool valid() const { return buf != Buf::kNone; }
};

enum class FlowKind : uint8_t { kSend, kRecv, kCopy };

struct Flow {
  FlowKind kind = FlowKind::kCopy;
  int peer = -1;
  Ref src, dst;
  int forwardPeer = -1;
  size_t bytes = 0;
  uint32_t runs = 1;  // the bytes are `runs` runs of bytes / runs each (1: one range)
  size_t srcStride = 0, dstStride = 0;  // bytes from one run's start to the next's
  bool reduce = false;
  bool finalize = false;
  uint16_t op = 0;          // index into Plan::ops (the operation this flow serves)
  bool sendsDesc = false;   // first bytes this op sends to (forward)peer: the descriptor
  bool expectsDesc = false; // first bytes this op receives from peer: the descriptor
  // The bytes this flow sends (its source, or for a forward its destination)
  // stay unchanged for the rest of the operation: a transport may lend them
  // to the peer instead of copying them (shm single copy). Set by seal().
  bool lends = false;
  // A lending flow for which the ring costs one user copy's time, not two,
  // so that lending pays only where one kernel copy beats one user copy
  // (shm single copy; set by seal()): its rank receives nothing after it, in
  // the same phase or a later one (a root streaming a broadcast, a leaf of a
  // reduce: the ring's copy in runs on the idle sender while the receiver
  // copies out), or the rank's next receive reduces (an exchange of partial
  // sums: each receiver reads the ring from cache as it reduces, and lending
  // only turns the sender's copy into the receiver's kernel copy). Not a
  // send-only phase followed by plain receives (a ring all-gather's first
  // step): its sends are buffered and the rank goes straight on to receive.
  bool lendingSavesOneCopy = false;
  // lendingSavesOneCopy in a collective that reduces nothing (broadcast,
  // all-gather, all-to-all): its receiver copies plain bytes, so the idle
  // sender can write part of them into the receiver's destination while the
  // receiver reads the rest (shm single copy shared, single_copy.h). Set by seal().
  bool lendingShared = false;
  // A lending flow whose phase also receives from the peer it sends to
  // (an exchange): that peer reads while this rank sends, so the flow's
  // packets need not all fit in the link at once and its descriptor may go
  // in a packet of its own (exec: the first fragment is then lent, not
  // copied). Elsewhere (a ring's send-only phase) plans count on a flow's
  // packets fitting the link's slots. Set by seal().
  bool peerReadsMeanwhile = false;
  // A Recv or Copy whose destination bytes this rank does not read again in
  // the operation (no later phase's source, no flow of its phase trailing
  // it): they may be written with streaming stores. Set by seal()
  // (plan_final_writes.cc).
  bool writesFinalBytes = false;
  // A Send or reducing Recv: the index, within this flow's phase, of an
  // earlier Recv whose destination is this flow's source (the same bytes,
  // runs and stride), used as fast as that flow fills it; -1: the source is
  // all there.
  int32_t trails = -1;
  // A Send, or a Copy that sends on, whose last packets get smaller, down to
  // this many bytes (fragmentBytes; 0: not tapered): one whose receiver sends
  // on what lands (node_fanout.h).
  // Only where that receiver lands every packet whatever its own links
  // hold: a tapered flow takes more of a link's packet slots, so a receiver
  // that takes a packet only when it can forward it could wait in a circle
  // for slots that a plan sized for whole packets expects to be free.
  uint32_t taperTo = 0;
  // A Send whose first packets are smaller (rampedFragmentBytes): a
  // contribution its receiver sums and sends on as it lands (node_fanin.h).
  // Where that receiver lands it whatever its own links hold, as for taperTo.
  bool rampsUp = false;
};

enum class Coll : uint8_t {
  kAllReduce = 1, kReduceScatter, kAllGather, kBroadcast, kReduce, kAllToAll, kSend, kRecv,
  kBarrier
};
const char* collName(Coll c);

// Bytes of each run of a flow.
inline size_t runBytes(const Flow& f) { return f.runs > 1 ? f.bytes / f.runs : f.bytes; }
// The peer a flow sends to (a Send's peer, or where a Recv / Copy forwards),
// and the one it receives from (a Recv's); -1: none.
inline int outPeerOf(const Flow& f) { return f.kind == FlowKind::kSend ? f.peer : f.forwardPeer; }
inline int inPeerOf(const Flow& f) { return f.kind == FlowKind::kRecv ? f.peer : -1; }
// Whether a copy flow writes exactly where it reads (rebinding can make one).
inline bool copiesOntoItself(const Flow& f) {
  return f.kind == FlowKind::kCopy && f.src.buf == f.dst.buf && f.src.offset == f.dst.offset &&
         (f.runs <= 1 || f.srcStride == f.dstStride);
}

// What the caller asked for; sent ahead of the data so that mismatched calls
// are caught (strataMismatch) instead of corrupting data.
struct OpDesc {
  Coll coll = Coll::kAllReduce;
  strataDataType_t dtype = strataFloat32;
  strataRedOp_t redop = strataSum;
  int32_t root = -1;  // root; for send/recv the peer
  uint64_t count = 0;
  uint64_t seq = 0;   // per-communicator collective sequence number (0 for send/recv)
  // A fused operation (src/fusion): how many tensors (wrapping at 65536) and a
  // hash of their sizes and keys, so that ranks which fused different lists
  // to the same total fail with strataMismatch instead of mixing tensors up.
  uint16_t fusedTensors = 0;
  uint32_t layout = 0;
  std::string describe() const;
};
// On the wire a descriptor is 24 bytes, so that a slot's 8-byte word, the
// descriptor and up to 32 bytes of data share one 64-byte cache line (a tiny
// call's whole packet: the reader's second line was a fifth of its time). To
// fit, `count` travels as its low 48 bits (request.cc keeps every count's
// bytes below 2^48) and `seq` as its low 32: the receiver widens it back
// against its own (widenSeq), as peers' sequence numbers are never 2^31 apart.
constexpr size_t kOpDescBytes = 24;
// In front of more than kOpDescUnpaddedValues bytes of values a sender (the
// general executor and the tiny path alike) pads the descriptor to
// kOpDescPaddedBytes (its first byte says so), so that the values start
// where they did behind the 32-byte descriptor of before: 16 bytes past a
// line in a shm slot, the offset its copies and reductions are fastest at
// (behind 24 bytes, a 2-rank 256 KiB broadcast took 1.2x as long).
constexpr size_t kOpDescPaddedBytes = 32;
constexpr size_t kOpDescUnpaddedValues = 32;
// Where the encoded descriptor holds `seq`'s low 32 bits: the only field that
// changes between repeated calls (exec/tiny_run.cc patches it).
constexpr size_t kOpDescSeqOffset = 20;
// Writes kOpDescBytes, or kOpDescPaddedBytes where `padded`.
void encodeOpDesc(const OpDesc& d, uint8_t* out, bool padded = false);
// `out->seq` is the low 32 bits sent: widenSeq it before comparing. Reads
// kOpDescBytes; opDescBytes says how many the sender wrote.
bool decodeOpDesc(const uint8_t in[kOpDescBytes], OpDesc* out);
// The bytes of the descriptor that starts at `in` (its first byte read):
// kOpDescPaddedBytes where it is padded, else kOpDescBytes.
size_t opDescBytes(const uint8_t* in);
// The bytes a sender puts in front of `values` bytes of values.
inline size_t opDescBytesBefore(size_t values) {
  return values > kOpDescUnpaddedValues ? kOpDescPaddedBytes : kOpDescBytes;
}
// The sequence number whose low 32 bits are `low32` nearest to `near`.
uint64_t widenSeq(uint64_t near, uint64_t low32);
bool descMatches(const OpDesc& mine, const OpDesc& theirs);

struct Phase {
  uint32_t first = 0, count = 0;  // flows[first .. first+count)
};

struct Plan {
  std::vector<OpDesc> ops;
  std::vector<Flow> flows;
  std::vector<Phase> phases;
  size_t scratchBytes = 0;
  size_t elemSize = 1;
  strataDataType_t dtype = strataFloat32;
  strataRedOp_t redop = strataSum;
  int nranks = 1;
  std::string algorithm;
  // `algorithm`, interned by seal() (the text lives as long as the process):
  // what per-operation records point at instead of copying the name.
  const char* algorithmName = "";
  double predictedUs = -1;  // the cost model's prediction (-1: forced or none)
  // How the algorithm runs where its name does not say it all (the cost
  // model's calls its builder made: a radix, stages side by side, recursive
  // doubling of short parts); empty where there is nothing to add. Logged at
  // STRATA_DEBUG=INFO beside the choice.
  std::string shape;

  // Starts a new phase; following add() calls put flows in it.
  void beginPhase();
  Flow& add(const Flow& f);
  // Every peer the plan talks to (filled by seal()).
  std::vector<int> peers;
  // Bytes this rank sends to / receives from each of `peers` (same order;
  // filled by seal()), for the statistics per transport.
  std::vector<uint64_t> bytesTo, bytesFrom;

  // Marks the first flow per (op, peer, direction) to carry the descriptor.
  void markDescriptors();
  // Marks the flows whose sent bytes no later phase overwrites (Flow::lends;
  // plan_lending.cc) and the extents of the send and receive buffers.
  void markLending();
  // Sets Flow::writesFinalBytes.
  void markFinalWrites();
  // Bytes of the send / receive buffer the flows touch (from offset 0): the
  // executor lends from the send buffer only where it does not overlap the
  // receive buffer (an in-place call), since the analysis keeps them apart.
  size_t sendExtent = 0, recvExtent = 0;
  // Call once the flows are final: marks descriptors and lending, collects peers.
  void seal();

  // The executor's compiled form of a plan whose flows are one packet each
  // over shared memory (exec/tiny_run.h), made after the plan's first run
  // (`tinyChecked`: tried; `tiny` stays empty where the plan is not tiny).
  std::shared_ptr<TinyPlan> tiny;
  bool tinyChecked = false;
};

// Inputs every algorithm needs.
struct CollArgs {
  Coll coll;
  int rank = 0, nranks = 1;
  size_t count = 0;  // elements, as the C API defines it per collective
  strataDataType_t dtype = strataFloat32;
  strataRedOp_t redop = strataSum;
  int root = 0;
  bool inPlace = false;
  size_t chunkBytes = 524288;  // pipeline slice
  const Topology* topo = nullptr;  // where ranks are (hierarchical algorithms need it)
  // From how many bytes touched on a rank a call writes its outputs with
  // streaming stores (LinkSet::streamedOutputBytes; never by default).
  size_t streamedOutputBytes = ~size_t(0);
};

// Element ranges [begin, end) of block b when `count` elements split in n blocks.
inline size_t blockBegin(size_t count, int n, int b) {
  size_t base = count / size_t(n), extra = count % size_t(n);
  return size_t(b) * base + (size_t(b) < extra ? size_t(b) : extra);
}

// Block b of that split in bytes (elements of `elemSize`): where it starts, how long it is.
struct ByteSpan {
  size_t offset = 0, bytes = 0;
};
inline ByteSpan blockSpan(size_t count, int n, int b, size_t elemSize) {
  const size_t begin = blockBegin(count, n, b);
  return {begin * elemSize, (blockBegin(count, n, b + 1) - begin) * elemSize};
}

}  // namespace strata
