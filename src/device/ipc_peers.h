// The cuda_ipc path of a communicator whose ranks all share one host: this
// rank's ring of staging slots in device memory, every other rank's ring
// mapped into this process (CUDA IPC handles exchanged over the
// communicator's host links), and the step that runs a collective piece on
// them (ipc_plan.h) between two host barriers. A piece's data never leaves
// the GPU(s): the copies in and out are device-to-device on the caller's
// stream, and the reductions read the peers' slots directly (NVLink, PCIe, or
// one GPU's memory when the ranks share it).
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
  uint8_t* slotOf(int rank, uint64_t number) const {
    return bases_[size_t(rank)] + size_t(slotIndex(number)) * slotBytes_;
  }
  // Barrier 1: every rank's step header, compared with this rank's.
  void agreeOnStep(const Step& s);

  Comm& comm_;
  const int device_;
  const size_t slotBytes_;
  const int slots_;
  uint8_t* ring_ = nullptr;       // this rank's slots: slots_ x slotBytes_ of device memory
  std::vector<uint8_t*> bases_;   // every rank's ring as this process sees it (ring_ for this rank)
  std::vector<void*> released_;   // per slot: recorded after its last copies out
  std::vector<bool> recorded_;
  void* stream_ = nullptr;        // the proxy's reductions and copies
  uint64_t issued_ = 0;           // caller's thread
};

}  // namespace strata
