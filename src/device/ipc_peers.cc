#include "device/ipc_peers.h"

#include <cstring>

#include "core/comm.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"
#include "device/cuda_result.h"
#include "device/ipc_plan.h"
#include "exec/request.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/device_runtime.h"

namespace strata {

namespace {

// What each rank offers at connect, as words of an all-gather: its ring's
// IPC handle, the ring's size, and whether it could export it at all.
constexpr size_t kHandleWords = cuda::kIpcHandleBytes / 8;
constexpr size_t kOfferWords = kHandleWords + 2;

// A step's call as one word, for the comparison between ranks.
uint64_t callWord(const IpcPeers::Step& s) {
  return uint64_t(s.coll) | uint64_t(s.dtype) << 8 | uint64_t(s.op) << 16 | uint64_t(uint32_t(s.root)) << 32;
}

std::string describeCall(uint64_t number, uint64_t call, uint64_t elements) {
  return format("step %llu: %s of %llu %s elements per row, op %s, root %d", (unsigned long long)number,
                collName(Coll(call & 0xff)), (unsigned long long)elements, dtypeName(strataDataType_t((call >> 8) & 0xff)),
                redOpName(strataRedOp_t((call >> 16) & 0xff)), int(int32_t(call >> 32)));
}

}  // namespace

IpcPeers::IpcPeers(Comm& comm, int device, size_t slotBytes, int slots)
    : comm_(comm), device_(device), slotBytes_(slotBytes), slots_(slots), released_(size_t(slots), nullptr),
      recorded_(size_t(slots), false) {
  const Topology& t = comm.topology();
  const int node = t.nodeOf(comm.rank());
  local_ = t.node(node);
  for (size_t i = 0; i < local_.size(); ++i)
    if (local_[i] == comm.rank()) me_ = int(i);
  for (int m = 0; m < t.nnodes(); ++m) {
    if (m == node) column_.me = m;
    column_.members.push_back(t.node(m)[size_t(me_)]);  // ipcCanCarry: every node has the same size
  }
  bases_.assign(local_.size(), nullptr);
}

std::unique_ptr<IpcPeers> IpcPeers::connect(Comm& comm, int device, size_t slotBytes, int slots) {
  const int n = comm.nranks(), me = comm.rank();
  slotBytes = (slotBytes + 63) / 64 * 64;
  std::unique_ptr<IpcPeers> peers(new IpcPeers(comm, device, slotBytes, slots));
  std::string why;
  uint64_t offer[kOfferWords] = {};
  try {
    DeviceScope scope(device);
    void* ring = nullptr;
    cudaOk(cuda::allocDevice(slotBytes * size_t(slots), &ring));
    peers->ring_ = static_cast<uint8_t*>(ring);
    peers->bases_[size_t(peers->me_)] = peers->ring_;
    if (peers->column_.size() > 1) {
      void* staging = nullptr;
      cudaOk(cuda::allocPinned(slotBytes, &staging));
      peers->staging_ = static_cast<uint8_t*>(staging);
    }
    cudaOk(cuda::createStream(&peers->stream_));
    cudaOk(cuda::createEvent(&peers->finished_));
    for (void*& e : peers->released_) cudaOk(cuda::createEvent(&e));
    uint8_t handle[cuda::kIpcHandleBytes];
    cudaOk(cuda::ipcExport(ring, handle));
    std::memcpy(offer, handle, sizeof handle);
    offer[kHandleWords] = slotBytes * size_t(slots);
    offer[kHandleWords + 1] = 1;
  } catch (const Error& e) {
    why = format("rank %d: %s", me, e.what());
  }
  // Round 1: every rank's offer. What follows depends only on what all ranks
  // received, so every rank decides alike.
  std::vector<uint64_t> offers(size_t(n) * kOfferWords);
  hostAllGather(comm, offer, offers.data(), kOfferWords);
  bool usable = true;
  for (int q = 0; q < n && usable; ++q) {
    const uint64_t* o = &offers[size_t(q) * kOfferWords];
    if (o[kHandleWords + 1] != 1 || o[kHandleWords] != slotBytes * size_t(slots)) usable = false;
  }
  if (!usable) {
    STRATA_WARN("cuda_ipc: not every rank could offer its staging slots (%s); device collectives stage through "
                "host memory", why.empty() ? "another rank's did not export, or the ranks' STRATA_DEVICE_STAGING_"
                "BYTES / _SLOTS differ" : why.c_str());
    return nullptr;
  }
  // Round 2: whether every rank mapped the rings of its node.
  uint64_t mapped = 1;
  try {
    DeviceScope scope(device);
    for (size_t i = 0; i < peers->local_.size(); ++i) {
      const int q = peers->local_[i];
      if (q == me) continue;
      uint8_t handle[cuda::kIpcHandleBytes];
      std::memcpy(handle, &offers[size_t(q) * kOfferWords], sizeof handle);
      void* base = nullptr;
      cudaOk(cuda::ipcOpen(handle, &base));
      peers->bases_[i] = static_cast<uint8_t*>(base);
    }
  } catch (const Error& e) {
    why = format("rank %d: %s", me, e.what());
    mapped = 0;
  }
  std::vector<uint64_t> everyone(static_cast<size_t>(n));
  hostAllGather(comm, &mapped, everyone.data(), 1);
  for (uint64_t m : everyone)
    if (m != 1) {
      STRATA_WARN("cuda_ipc: not every rank could map the others' staging slots (%s); device collectives stage "
                  "through host memory", why.empty() ? "another rank failed" : why.c_str());
      return nullptr;
    }
  STRATA_INFO("cuda_ipc: rank %d mapped the staging slots of its node's %zu ranks on device %d (%d slots of %zu "
              "bytes each; %d nodes)", me, peers->local_.size(), device, slots, slotBytes, peers->column_.size());
  return peers;
}

IpcPeers::~IpcPeers() {
  try {
    DeviceScope scope(device_);
    // The proxy's last kernels and copies (a step that timed out may still be
    // queued on the GPU): while they may run, the mappings, slots and stream they
    // use stay as they are.
    if (gpuWorkRecorded_ && !eventDoneWithin(finished_, comm_.timeoutMs())) {
      STRATA_WARN("cuda_ipc: the GPU has not finished a step's reductions; the staging slots, their mappings "
                  "and the proxy's stream are left in place rather than freed under it");
      return;
    }
    bool copiedOut = true;
    for (size_t i = 0; i < released_.size(); ++i)
      if (recorded_[i] && !eventDoneWithin(released_[i], comm_.timeoutMs())) copiedOut = false;
    for (size_t q = 0; q < bases_.size(); ++q)
      if (bases_[q] && bases_[q] != ring_) cuda::ipcClose(bases_[q]);
    if (copiedOut) cuda::freeDevice(ring_);
    else
      STRATA_WARN("cuda_ipc: a stream has not copied out of a staging slot; the slots are left allocated rather "
                  "than freed under the copy");
    cuda::freePinned(staging_);  // only the proxy's copies used it, and they are done
    cuda::destroyStream(stream_);
    cuda::destroyEvent(finished_);
    for (void* e : released_) cuda::destroyEvent(e);
  } catch (const std::exception& e) {
    STRATA_WARN("cuda_ipc: releasing the staging slots failed: %s", e.what());
  }
}

uint64_t IpcPeers::beginStep(void* stream, uint8_t** slot) {
  DeviceScope scope(device_);
  const uint64_t number = ++issued_;
  const size_t i = size_t(slotIndex(number));
  if (recorded_[i]) cudaOk(cuda::streamWaitEvent(stream, released_[i]));
  *slot = slotOf(me_, number);
  return number;
}

void IpcPeers::endStep(uint64_t number, void* stream) {
  DeviceScope scope(device_);
  const size_t i = size_t(slotIndex(number));
  cudaOk(cuda::recordEvent(released_[i], stream));
  recorded_[i] = true;
}

void IpcPeers::agreeOnStep(const Step& s) {
  const int n = comm_.nranks();
  const uint64_t mine[3] = {s.number, callWord(s), s.elements};
  std::vector<uint64_t> all(size_t(n) * 3);
  hostAllGather(comm_, mine, all.data(), 3);
  for (int q = 0; q < n; ++q) {
    const uint64_t* theirs = &all[size_t(q) * 3];
    if (std::memcmp(theirs, mine, sizeof mine) != 0)
      fail(strataMismatch, "cuda_ipc: rank %d runs %s while rank %d runs %s (every rank must call the same "
           "collectives with the same arguments, on device buffers everywhere)", q,
           describeCall(theirs[0], theirs[1], theirs[2]).c_str(), comm_.rank(),
           describeCall(mine[0], mine[1], mine[2]).c_str());
  }
}

void IpcPeers::allDone(const Step& s) {
  const uint64_t done = s.number;
  std::vector<uint64_t> all(size_t(comm_.nranks()));
  hostAllGather(comm_, &done, all.data(), 1);
}

void IpcPeers::enqueueReduce(const IpcReduce& r, uint64_t divisor, const Step& s) {
  cuda::ReduceCopyArgs a;
  for (const IpcRegion& src : r.srcs) a.src[a.nsrc++] = at(src, s.number);
  for (const IpcRegion& dst : r.dsts) a.dst[a.ndst++] = at(dst, s.number);
  a.count = r.count;
  a.divisor = divisor;
  cudaOk(cuda::enqueueReduceCopy(a, s.dtype, s.op, stream_));
}

void IpcPeers::enqueueCopies(const std::vector<IpcCopy>& copies, const Step& s) {
  for (const IpcCopy& c : copies)
    cudaOk(cuda::copyAsync(at(c.dst, s.number), at(c.src, s.number), c.bytes, stream_));
}

void IpcPeers::finishOnGpu(const Step& s, const char* what) {
  cudaOk(cuda::recordEvent(finished_, stream_));
  gpuWorkRecorded_ = true;
  if (!eventDoneWithin(finished_, comm_.timeoutMs()))
    fail(strataTimeout, "cuda_ipc: rank %d's %s of step %llu did not finish on the GPU within %d ms", comm_.rank(),
         what, (unsigned long long)s.number, comm_.timeoutMs());
}

void IpcPeers::run(const Step& s) {
  agreeOnStep(s);
  if (column_.size() > 1) return runAcrossNodes(s);
  const IpcWork w = planIpcStep(s.coll, s.dtype, s.op, s.root, s.elements, int(local_.size()), me_);
  for (const IpcReduce& r : w.reduces) enqueueReduce(r, w.divisor, s);
  enqueueCopies(w.copies, s);
  finishOnGpu(s, "reductions and copies");
  allDone(s);
}

void IpcPeers::runAcrossNodes(const Step& s) {
  const IpcShardWork w =
      planIpcShardAllReduce(s.dtype, s.op, s.elements, int(local_.size()), me_, comm_.nranks());
  uint8_t* shard = slotOf(me_, s.number) + w.offset;
  const size_t bytes = w.count * dtypeSize(s.dtype);
  if (w.count) {
    enqueueReduce(w.reduce, 1, s);
    cudaOk(cuda::copyAsync(staging_, shard, bytes, stream_));
    finishOnGpu(s, "shard reduction");
  }
  // Every rank takes part (an empty shard too), so the sequence numbers stay in step.
  runTeamAllReduce(comm_, column_, staging_, w.count, s.dtype, s.op == strataAvg ? strataSum : s.op);
  if (w.count) {
    cudaOk(cuda::copyAsync(shard, staging_, bytes, stream_));
    enqueueReduce(w.spread, w.divisor, s);
    enqueueCopies(w.copies, s);
    finishOnGpu(s, "spread of the shard");
  }
  allDone(s);
}

}  // namespace strata
