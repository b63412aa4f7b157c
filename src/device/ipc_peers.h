// The cuda_ipc path: this rank's ring of staging slots in device memory, the
// rings of the other ranks of its node mapped into this process (CUDA IPC
// handles exchanged over the communicator's host links), and the step that
// runs a collective piece on them (ipc_plan.h) between two host barriers.
// On one node a piece's data never leaves the GPU(s): the copies in and out
// are device-to-device on the caller's stream, and the reductions read the
// peers' slots directly (NVLink, PCIe, or one GPU's memory when the ranks
// share it). Across nodes (all-reduce only, the same number of ranks on
// every node) each rank reduces its shard within the node, all-reduces just
// that shard between nodes through pinned host memory with the ranks of the
// same local index, and spreads the result within the node: each rank moves
// 1/L of the data through the host instead of all of it.
//
// Slots are indexed by the IPC step number, which every rank counts alike
// (the collectives every rank calls), not by the device queue's tickets
// (which count send / receive steps too, and those differ between ranks).
// The first barrier of each step compares every rank's step number and call,
// so ranks that diverge get strataMismatch, never each other's data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "algo/plan.h"
#include "algo/ring_blocks.h"
#include "device/ipc_plan.h"
#include "strata/strata.h"

namespace strata {

class Comm;

class IpcPeers {
 public:
  // Collective over `comm`: every rank calls it at the same point (its first
  // device collective that IPC can carry) with nothing else running on the
  // communicator. Returns null on every rank when any rank cannot export or
  // map the slots (the reason logged), so that all ranks stage through the
  // host instead; throws only when the exchange itself fails.
  static std::unique_ptr<IpcPeers> connect(Comm& comm, int device, size_t slotBytes, int slots);
  // Frees this rank's ring once the streams have copied out of it (bounded by
  // the communicator's timeout; left allocated otherwise) and unmaps the peers'.
  ~IpcPeers();
  IpcPeers(const IpcPeers&) = delete;
  IpcPeers& operator=(const IpcPeers&) = delete;

  size_t slotBytes() const { return slotBytes_; }

  // What one step runs (one piece of one collective).
  struct Step {
    uint64_t number = 0;  // 1, 2, ...: the same on every rank
    Coll coll = Coll::kAllReduce;
    strataDataType_t dtype = strataFloat32;
    strataRedOp_t op = strataSum;
    int root = 0;
    size_t elements = 0;  // per row
  };

  // Caller's thread: the next step's number and this rank's slot for it,
  // after making `stream` wait until the slot's last copies out are done.
  uint64_t beginStep(void* stream, uint8_t** slot);
  // Caller's thread, after the step's copies out on `stream`.
  void endStep(uint64_t number, void* stream);
  // Proxy thread, once this rank's input is in its slot: runs the step with
  // every other rank and returns when its result is in every slot it goes to.
  void run(const Step& s);

 private:
  IpcPeers(Comm& comm, int device, size_t slotBytes, int slots);
  int slotIndex(uint64_t number) const { return int((number - 1) % uint64_t(slots_)); }
  // The slot of the node's local rank `area` (as ipc_plan.h numbers areas).
  uint8_t* slotOf(int area, uint64_t number) const {
    return bases_[size_t(area)] + size_t(slotIndex(number)) * slotBytes_;
  }
  uint8_t* at(const IpcRegion& r, uint64_t number) const { return slotOf(r.area, number) + r.offset; }
  void enqueueReduce(const IpcReduce& r, uint64_t divisor, const Step& s);
  void enqueueCopies(const std::vector<IpcCopy>& copies, const Step& s);
  // Barrier 1: every rank's step header, compared with this rank's.
  void agreeOnStep(const Step& s);
  // Barrier 2: every rank's writes are done.
  void allDone(const Step& s);
  void runAcrossNodes(const Step& s);
  // Waits, bounded by the communicator's timeout, until the work enqueued on
  // stream_ so far is done; strataTimeout naming `what` otherwise.
  void finishOnGpu(const Step& s, const char* what);

  Comm& comm_;
  const int device_;
  const size_t slotBytes_;
  const int slots_;
  std::vector<int> local_;        // the global ranks of this node, by local index
  int me_ = 0;                    // this rank's local index
  Team column_;                   // the ranks of this local index on every node, by node
  uint8_t* ring_ = nullptr;       // this rank's slots: slots_ x slotBytes_ of device memory
  std::vector<uint8_t*> bases_;   // the node's rings as this process sees them, by local index
  uint8_t* staging_ = nullptr;    // pinned: a shard between nodes (only with several nodes)
  std::vector<void*> released_;   // per slot: recorded after its last copies out
  std::vector<bool> recorded_;
  void* stream_ = nullptr;        // the proxy's reductions and copies
  void* finished_ = nullptr;      // recorded on stream_ at the end of a step's GPU work
  bool gpuWorkRecorded_ = false;  // finished_ has been recorded (proxy thread; read at destruction)
  uint64_t issued_ = 0;           // caller's thread
};

}  // namespace strata
