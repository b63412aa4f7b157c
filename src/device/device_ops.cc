#include "device/device_ops.h"

#include <algorithm>

#include "core/dtype.h"
#include "core/error.h"
#include "device/cuda_result.h"
#include "device/device_queue.h"
#include "device/ipc_peers.h"
#include "device/ipc_plan.h"
#include "device/staged_request.h"
#include "fusion/group_fusion.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/device_runtime.h"

namespace strata {

namespace {

void enqueueCopy(const RowCopy& c, void* stream) {
  if (c.rows == 0) return;
  cudaOk(cuda::copy2DAsync(c.dst, c.dstPitch, c.src, c.srcPitch, c.rowBytes, c.rows, stream));
}

// Rows up to this size go through the multi-copy kernel when a group has at
// least kKernelCopyMinRows of them: one launch per 120 rows instead of one
// copy-engine call each (a group of 1000 small tensors). Longer rows stay on
// the copy engines, which reach PCIe's bandwidth without taking SMs.
constexpr size_t kKernelCopyRowBytes = 64 * 1024;
constexpr size_t kKernelCopyMinRows = 4;

// A group's copies one way (all in, or all out), on `stream`.
void enqueueGroupCopies(const std::vector<const RowCopy*>& copies, int device, void* stream) {
  std::vector<cuda::CopySegment> rows;
  for (const RowCopy* c : copies)
    if (c->rows && c->rowBytes <= kKernelCopyRowBytes)
      for (size_t r = 0; r < c->rows; ++r) {
        cuda::CopySegment& s = rows.emplace_back();
        s.src = static_cast<const uint8_t*>(c->src) + r * c->srcPitch;
        s.dst = static_cast<uint8_t*>(c->dst) + r * c->dstPitch;
        s.bytes = c->rowBytes;
      }
  const bool kernel = rows.size() >= kKernelCopyMinRows;
  if (kernel) {
    DeviceScope on(device);
    cudaOk(cuda::enqueueInlineMultiCopy(rows.data(), int(rows.size()), stream));
  }
  for (const RowCopy* c : copies)
    if (!kernel || c->rowBytes > kKernelCopyRowBytes) enqueueCopy(*c, stream);
}

// The device of the request's buffers; the communicator's queue is bound to
// the first one it sees.
DeviceQueue& queueFor(Comm& c, const Request& r, const char* fn) {
  const void* any = r.send ? r.send : r.recv;
  int device = -1;
  cudaOk(cuda::deviceOfPointer(any, &device));
  bool capturing = false;
  cudaOk(cuda::streamIsCapturing(r.stream, &capturing));
  if (capturing)
    fail(strataUnsupported, "%s: the stream is being captured into a CUDA graph; strata's device operations "
         "are not capturable yet (call it outside the capture)", fn);
  DeviceQueue& q = c.deviceQueue(device);
  if (q.device() != device)
    fail(strataInvalidUsage, "%s: the buffers are on device %d but this communicator works on device %d "
         "(one communicator per device)", fn, device, q.device());
  return q;
}

// Whether the request's pieces go over CUDA IPC (ipc_peers.h): a collective
// on a communicator of 2 to kIpcMaxRanks ranks that all share this host, or
// an all-reduce on several nodes of 2 to kIpcMaxRanks ranks each, unless
// STRATA_CUDA_IPC=0 or STRATA_TRANSPORT forces a network transport. Every
// rank decides alike (the topology and the call are the same everywhere).
bool ipcCanCarry(const Comm& c, const Request& r) {
  const std::string& forced = c.config().transport;
  if (!c.config().cudaIpc || !(forced.empty() || forced == "shm")) return false;
  const Topology& t = c.topology();
  const int local = t.maxLocal();
  if (local < 2 || local > kIpcMaxRanks) return false;
  if (t.nnodes() == 1) return ipcCarries(r.coll);
  return r.coll == Coll::kAllReduce && t.uniform();
}

// On a communicator of one rank every collective's result is its input (Avg
// divides by 1): it is one device-to-device copy on the stream, or nothing in
// place, as NCCL's, and nothing goes through the host. Sends and receives
// (to itself) are left to the caller: returns whether `r` was a collective.
bool copiedOnOneRank(const Request& r, int device) {
  if (r.coll == Coll::kSend || r.coll == Coll::kRecv) return false;
  if (r.send && r.recv && r.send != r.recv && r.count) {
    DeviceScope on(device);
    const size_t bytes = r.count * dtypeSize(r.dtype);
    enqueueCopy(RowCopy{r.recv, r.send, bytes, 1, bytes, bytes}, r.stream);
  }
  return true;
}

void runHostPiece(Request& host) {
  if (host.coll == Coll::kSend || host.coll == Coll::kRecv) runP2P(*host.comm, {host});
  else runCollective(host);
}

}  // namespace

void enqueueDeviceRequest(Request& r) {
  Comm& c = *r.comm;
  if (c.failed()) c.throwFailed();
  if (r.count == 0) return;
  DeviceQueue& q = queueFor(c, r, collName(r.coll));
  if (c.nranks() == 1 && copiedOnOneRank(r, q.device())) return;
  // Over IPC a piece is staged in this rank's device slot, which the other
  // ranks read and write; otherwise in pinned host memory, where the host
  // collective runs.
  IpcPeers* ipc = ipcCanCarry(c, r) ? q.ipcPeers() : nullptr;
  const WorldPlace at{c.nranks(), c.rank()};
  const size_t perElement = stagingRowsPerElement(r, at) * dtypeSize(r.dtype);
  const size_t chunk = std::max<size_t>(1, q.slotBytes() / perElement);
  const size_t pieces = (r.count + chunk - 1) / chunk;
  const size_t depth = std::min(size_t(q.slots()), pieces);
  std::vector<StagedPiece> staged(pieces);
  std::vector<uint64_t> tickets(pieces), ipcSteps(pieces);
  auto copyIn = [&](size_t i) {
    const size_t offset = i * chunk, elements = std::min(chunk, r.count - offset);
    const size_t bytes = stagingBytes(r, at, elements);
    uint8_t* area = nullptr;
    if (ipc) {
      if (bytes > ipc->slotBytes())
        fail(strataInternalError, "cuda_ipc: a piece of %zu bytes does not fit a %zu-byte slot", bytes,
             ipc->slotBytes());
      ipcSteps[i] = ipc->beginStep(r.stream, &area);
    } else {
      area = q.beginStep(bytes, r.stream);
    }
    staged[i] = stagePiece(r, at, offset, elements, area);
    enqueueCopy(staged[i].copyIn, r.stream);
    if (ipc)
      tickets[i] = q.submitStep(r.stream, [ipc, step = IpcPeers::Step{ipcSteps[i], r.coll, r.dtype, r.redop, r.root,
                                                                        elements}] { ipc->run(step); });
    else
      tickets[i] = q.submitStep(r.stream, [host = staged[i].host]() mutable { runHostPiece(host); });
  };
  // Copies in run ahead of the copies out by `depth` pieces (the slots).
  for (size_t i = 0; i < depth; ++i) copyIn(i);
  for (size_t i = 0; i < pieces; ++i) {
    q.waitStep(tickets[i], r.stream);
    enqueueCopy(staged[i].copyOut, r.stream);
    q.endStep(tickets[i], r.stream);
    if (ipc) ipc->endStep(ipcSteps[i], r.stream);
    if (i + depth < pieces) copyIn(i + depth);
  }
}

void enqueueDeviceGroup(Comm& c, std::vector<Request>& p2p, std::vector<Request>& collectives) {
  if (c.failed()) c.throwFailed();
  std::vector<Request*> all;
  for (Request& r : p2p)
    if (r.count) all.push_back(&r);
  for (Request& r : collectives)
    if (r.count) all.push_back(&r);
  if (all.empty()) return;
  void* stream = all[0]->stream;
  for (Request* r : all)
    if (r->stream != stream)
      fail(strataInvalidUsage, "strataGroupEnd: the group's device operations on one communicator use "
           "different streams; give them one stream");
  DeviceQueue& q = queueFor(c, *all[0], "strataGroupEnd");
  if (c.nranks() == 1) {  // the collectives are copies; sends and receives to itself are staged below
    all.erase(std::remove_if(all.begin(), all.end(), [&](Request* r) { return copiedOnOneRank(*r, q.device()); }),
              all.end());
    if (all.empty()) return;
  }
  const WorldPlace at{c.nranks(), c.rank()};
  // Each request's area starts 64-byte aligned, so the multi-copy kernel's
  // 16-byte accesses line up with the user's (allocator-aligned) buffers.
  auto areaBytes = [&](const Request& r) { return (stagingBytes(r, at, r.count) + 63) / 64 * 64; };
  size_t bytes = 0;
  for (Request* r : all) bytes += areaBytes(*r);
  uint8_t* area = q.beginStep(bytes, stream);
  std::vector<StagedPiece> staged;
  std::vector<Request> hostP2P, hostCollectives;
  for (Request* r : all) {
    staged.push_back(stagePiece(*r, at, 0, r->count, area));
    area += areaBytes(*r);
    const bool isP2P = r->coll == Coll::kSend || r->coll == Coll::kRecv;
    (isP2P ? hostP2P : hostCollectives).push_back(staged.back().host);
  }
  std::vector<const RowCopy*> copiesIn, copiesOut;
  for (const StagedPiece& p : staged) {
    copiesIn.push_back(&p.copyIn);
    copiesOut.push_back(&p.copyOut);
  }
  enqueueGroupCopies(copiesIn, q.device(), stream);
  Comm* comm = &c;
  uint64_t ticket = q.submitStep(stream, [comm, hostP2P, hostCollectives]() mutable {
    runP2P(*comm, hostP2P);
    runGroupCollectives(*comm, hostCollectives);
  });
  q.waitStep(ticket, stream);
  enqueueGroupCopies(copiesOut, q.device(), stream);
  q.endStep(ticket, stream);
}

void drainDeviceQueue(Comm& c) {
  if (DeviceQueue* q = c.existingDeviceQueue()) q->drain();
}

}  // namespace strata
