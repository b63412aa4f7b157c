#include "algo/plan.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <set>
#include <tuple>

#include "core/dtype.h"
#include "core/error.h"

namespace strata {

const char* collName(Coll c) {
  switch (c) {
    case Coll::kAllReduce: return "AllReduce";
    case Coll::kReduceScatter: return "ReduceScatter";
    case Coll::kAllGather: return "AllGather";
    case Coll::kBroadcast: return "Broadcast";
    case Coll::kReduce: return "Reduce";
    case Coll::kAllToAll: return "AllToAll";
    case Coll::kSend: return "Send";
    case Coll::kRecv: return "Recv";
    case Coll::kBarrier: return "Barrier";
  }
  return "Unknown";
}

std::string OpDesc::describe() const {
  std::string s = format("%s(count=%llu, %s", collName(coll), (unsigned long long)count,
                         dtypeName(dtype));
  if (coll == Coll::kAllReduce || coll == Coll::kReduceScatter || coll == Coll::kReduce)
    s += format(", %s", redOpName(redop));
  if (coll == Coll::kBroadcast || coll == Coll::kReduce) s += format(", root=%d", root);
  if (fusedTensors) s += format(", %u fused tensors, layout %08x", fusedTensors, layout);
  s += ")";
  if (coll != Coll::kSend && coll != Coll::kRecv)
    s += format(" as collective #%llu", (unsigned long long)seq);
  return s;
}

// Layout: magic(1) coll(1) dtype(1) redop(1) root(4) count(6) fusedTensors(2)
// layout(4) seq(4); padded, 8 zero bytes more (the magic says which).
constexpr uint8_t kDescMagic = 0x5d, kPaddedDescMagic = 0x5e;
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "descriptors are encoded as little-endian integers");

void encodeOpDesc(const OpDesc& d, uint8_t* out, bool padded) {
  const uint64_t count = d.count;  // below 2^48 (request.cc); the top 16 bits are not sent
  const uint32_t seq = uint32_t(d.seq);
  out[0] = padded ? kPaddedDescMagic : kDescMagic;
  out[1] = uint8_t(d.coll);
  out[2] = uint8_t(d.dtype);
  out[3] = uint8_t(d.redop);
  std::memcpy(out + 4, &d.root, 4);
  std::memcpy(out + 8, &count, 6);  // little-endian: the low 48 bits
  std::memcpy(out + 14, &d.fusedTensors, 2);
  std::memcpy(out + 16, &d.layout, 4);
  std::memcpy(out + kOpDescSeqOffset, &seq, 4);
  if (padded) std::memset(out + kOpDescBytes, 0, kOpDescPaddedBytes - kOpDescBytes);
}

size_t opDescBytes(const uint8_t* in) { return in[0] == kPaddedDescMagic ? kOpDescPaddedBytes : kOpDescBytes; }

bool decodeOpDesc(const uint8_t in[kOpDescBytes], OpDesc* out) {
  if (in[0] != kDescMagic && in[0] != kPaddedDescMagic) return false;
  if (in[1] < uint8_t(Coll::kAllReduce) || in[1] > uint8_t(Coll::kBarrier)) return false;
  if (!validDtype(in[2]) || !validRedOp(in[3])) return false;
  out->coll = Coll(in[1]);
  out->dtype = strataDataType_t(in[2]);
  out->redop = strataRedOp_t(in[3]);
  std::memcpy(&out->root, in + 4, 4);
  uint64_t count = 0;
  std::memcpy(&count, in + 8, 6);
  out->count = count;
  std::memcpy(&out->fusedTensors, in + 14, 2);
  std::memcpy(&out->layout, in + 16, 4);
  uint32_t seq;
  std::memcpy(&seq, in + kOpDescSeqOffset, 4);
  out->seq = seq;
  return true;
}

uint64_t widenSeq(uint64_t near, uint64_t low32) {
  const int64_t delta = int32_t(uint32_t(low32) - uint32_t(near));
  if (delta < 0 && uint64_t(-delta) > near) return uint32_t(low32);  // before 0: take it as sent
  return near + uint64_t(delta);
}

bool descMatches(const OpDesc& mine, const OpDesc& theirs) {
  if (mine.coll == Coll::kRecv)
    return theirs.coll == Coll::kSend && theirs.count == mine.count && theirs.dtype == mine.dtype;
  if (mine.coll != theirs.coll || mine.count != theirs.count || mine.dtype != theirs.dtype ||
      mine.seq != theirs.seq || mine.fusedTensors != theirs.fusedTensors ||
      mine.layout != theirs.layout)
    return false;
  bool hasOp = mine.coll == Coll::kAllReduce || mine.coll == Coll::kReduceScatter ||
               mine.coll == Coll::kReduce;
  bool hasRoot = mine.coll == Coll::kBroadcast || mine.coll == Coll::kReduce;
  return (!hasOp || mine.redop == theirs.redop) && (!hasRoot || mine.root == theirs.root);
}

void Plan::beginPhase() {
  phases.push_back({uint32_t(flows.size()), 0});
}

Flow& Plan::add(const Flow& f) {
  if (phases.empty()) beginPhase();
  flows.push_back(f);
  phases.back().count++;
  return flows.back();
}

namespace {

// One never-freed copy of each algorithm name a plan was sealed with.
const char* internedName(const std::string& name) {
  static std::mutex mu;
  static std::set<std::string>* names = new std::set<std::string>();
  std::lock_guard<std::mutex> lock(mu);
  return names->insert(name).first->c_str();
}

}  // namespace

void Plan::seal() {
  algorithmName = internedName(algorithm);
  markDescriptors();
  markLending();
  markFinalWrites();
  std::set<int> all;
  for (const Flow& f : flows) {
    if (f.peer >= 0) all.insert(f.peer);
    if (f.forwardPeer >= 0) all.insert(f.forwardPeer);
  }
  peers.assign(all.begin(), all.end());
  bytesTo.assign(peers.size(), 0);
  bytesFrom.assign(peers.size(), 0);
  auto slot = [&](int peer) {
    return size_t(std::lower_bound(peers.begin(), peers.end(), peer) - peers.begin());
  };
  for (const Flow& f : flows) {
    int out = outPeerOf(f);
    if (out >= 0) bytesTo[slot(out)] += f.bytes;
    if (f.kind == FlowKind::kRecv) bytesFrom[slot(f.peer)] += f.bytes;
  }
}

void Plan::markDescriptors() {
  std::set<std::tuple<uint16_t, int, int>> seen;  // (op, peer, 0=send / 1=recv)
  for (Flow& f : flows) {
    int out = outPeerOf(f);
    if (out >= 0 && seen.insert({f.op, out, 0}).second) f.sendsDesc = true;
    if (f.kind == FlowKind::kRecv && seen.insert({f.op, f.peer, 1}).second) f.expectsDesc = true;
  }
}

}  // namespace strata
