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

// Layout: magic(2) coll(1) dtype(1) redop(1) pad(1) fusedTensors(2) root(4) layout(4)
// count(8) seq(8).
void encodeOpDesc(const OpDesc& d, uint8_t out[kOpDescBytes]) {
  std::memset(out, 0, kOpDescBytes);
  out[0] = 0x5d;
  out[1] = 0xe5;
  out[2] = uint8_t(d.coll);
  out[3] = uint8_t(d.dtype);
  out[4] = uint8_t(d.redop);
  std::memcpy(out + 6, &d.fusedTensors, 2);
  std::memcpy(out + 8, &d.root, 4);
  std::memcpy(out + 12, &d.layout, 4);
  std::memcpy(out + 16, &d.count, 8);
  std::memcpy(out + kOpDescSeqOffset, &d.seq, 8);
}

bool decodeOpDesc(const uint8_t in[kOpDescBytes], OpDesc* out) {
  if (in[0] != 0x5d || in[1] != 0xe5) return false;
  if (in[2] < uint8_t(Coll::kAllReduce) || in[2] > uint8_t(Coll::kBarrier)) return false;
  if (!validDtype(in[3]) || !validRedOp(in[4])) return false;
  out->coll = Coll(in[2]);
  out->dtype = strataDataType_t(in[3]);
  out->redop = strataRedOp_t(in[4]);
  std::memcpy(&out->fusedTensors, in + 6, 2);
  std::memcpy(&out->root, in + 8, 4);
  std::memcpy(&out->layout, in + 12, 4);
  std::memcpy(&out->count, in + 16, 8);
  std::memcpy(&out->seq, in + kOpDescSeqOffset, 8);
  return true;
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
