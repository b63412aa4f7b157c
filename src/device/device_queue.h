// A communicator's device-buffer operations, run in the order of the CUDA
// streams they were enqueued on, without the caller's thread waiting (NCCL's
// semantics, over the host transports). Each operation is cut into steps:
//
//   caller's thread, on the user's stream:
//     copies in (device -> pinned slot), record the step's ready event,
//     wait until the counter reaches the step's ticket, copies out
//     (slot -> device), record the slot's released event;
//   the proxy thread, for each step in ticket order:
//     wait for the ready event, run the host collective on the slot, raise
//     the counter to the ticket (after a failure too, so no stream waits
//     forever; the failure marks the communicator failed).
//
// Staging is a ring of pinned slots: step t uses slot (t - 1) % slots, and its
// copies in wait, on the GPU, for the copies out of the slot's previous step,
// so a long operation pipelines (the copy in of step t + 1 overlaps the host
// collective of step t and the copy out of step t - 1) in bounded memory.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace strata {

class Comm;
class IpcPeers;

class DeviceQueue {
 public:
  // Binds to `device`; starts the proxy thread. Throws strataSystemError
  // when CUDA refuses (no pinned memory, no events).
  DeviceQueue(Comm& comm, int device);
  // Lets the submitted steps finish (bounded by the communicator's timeout;
  // at once when the communicator failed), stops the proxy, frees staging.
  ~DeviceQueue();
  DeviceQueue(const DeviceQueue&) = delete;
  DeviceQueue& operator=(const DeviceQueue&) = delete;

  int device() const { return device_; }
  int slots() const { return int(slots_.size()); }
  // The size of a slot for a chunked operation (STRATA_DEVICE_STAGING_BYTES).
  size_t slotBytes() const { return slotBytes_; }

  // The staging area of the next step, at least `bytes` long, safe to fill
  // by work enqueued on `stream` after this.
  uint8_t* beginStep(size_t bytes, void* stream);
  // Ends the step begun last, whose copies in are enqueued on `stream`; the
  // proxy will call `run` once they are done. Returns the step's ticket.
  uint64_t submitStep(void* stream, std::function<void()> run);
  // Work enqueued on `stream` after this waits until step `ticket` has run.
  void waitStep(uint64_t ticket, void* stream);
  // After the copies out of step `ticket` on `stream`: its slot may be reused.
  void endStep(uint64_t ticket, void* stream);

  // The cuda_ipc path (ipc_peers.h), connected at the first call: null when
  // the ranks cannot use it. Every rank must first ask at the same point (its
  // first device collective that IPC can carry); that call drains the queue
  // and exchanges the slots' handles over the host links.
  IpcPeers* ipcPeers();

  // Waits until every submitted step has run; throws strataTimeout after the
  // communicator's timeout (a stream that never reaches its steps).
  void drain();
  bool idle();

 private:
  struct Slot {
    uint8_t* memory = nullptr;
    size_t bytes = 0;
    void* released = nullptr;  // event recorded after the slot's last copies out
    bool recorded = false;
  };
  struct Step {
    uint64_t ticket;
    void* ready;
    std::function<void()> run;
  };
  void proxyLoop();
  bool waitReady(void* event);
  void runStep(Step& step);
  void* takeEvent();
  void giveEvent(void* event);
  void freeSlot(Slot& slot);
  Slot& slotOf(uint64_t ticket) { return slots_[size_t((ticket - 1) % slots_.size())]; }

  Comm& comm_;
  const int device_;
  const size_t slotBytes_;
  std::vector<Slot> slots_;
  std::vector<Slot> retired_;  // outgrown slot memory, freed at the end
  uint64_t* counter_ = nullptr;  // pinned; the streams wait on it
  uint64_t issued_ = 0;          // caller's thread only
  std::unique_ptr<IpcPeers> ipc_;  // caller's thread sets it; the proxy's steps use it
  bool ipcAsked_ = false;

  std::mutex mu_;
  std::condition_variable wake_, settled_;
  std::deque<Step> queue_;
  std::vector<void*> freeEvents_;
  uint64_t completed_ = 0;
  bool stop_ = false;
  std::thread proxy_;
};

}  // namespace strata
