#include "device/device_queue.h"

#include <chrono>

#include "core/comm.h"
#include "core/error.h"
#include "device/cuda_result.h"
#include "device/ipc_peers.h"
#include "core/log.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/device_runtime.h"

namespace strata {

namespace {

size_t slotSizeFor(size_t bytes) {
  size_t size = 64 * 1024;
  while (size < bytes) size *= 2;
  return size;
}

}  // namespace

DeviceQueue::DeviceQueue(Comm& comm, int device)
    : comm_(comm), device_(device), slotBytes_(comm.config().deviceStagingBytes) {
  DeviceScope scope(device_);
  // Before any stream of this queue waits on the host (cuda_kernels.h says why).
  cudaOk(cuda::loadKernels());
  slots_.resize(size_t(comm.config().deviceStagingSlots));
  void* counter = nullptr;
  cudaOk(cuda::allocPinned(64, &counter));
  counter_ = static_cast<uint64_t*>(counter);
  __atomic_store_n(counter_, uint64_t(0), __ATOMIC_RELEASE);
  for (Slot& s : slots_) {
    std::string e = cuda::createEvent(&s.released);
    if (!e.empty()) {
      for (Slot& t : slots_) cuda::destroyEvent(t.released);
      cuda::freePinned(counter_);
      fail(strataSystemError, "%s", e.c_str());
    }
  }
  proxy_ = std::thread([this] { proxyLoop(); });
}

DeviceQueue::~DeviceQueue() {
  if (!comm_.failed()) {
    try {
      drain();
    } catch (const std::exception& e) {
      comm_.markFailed(strataTimeout, e.what());
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  proxy_.join();
  // Whatever still waits on the counter (a failed or aborted communicator's
  // streams) goes on; its results are undefined, as NCCL's after an abort.
  __atomic_store_n(counter_, ~uint64_t(0), __ATOMIC_RELEASE);
  ipc_.reset();  // after the release: it waits for the streams' copies out of its slots
  for (Slot& s : slots_) freeSlot(s);
  for (Slot& s : retired_) freeSlot(s);
  for (void* e : freeEvents_) cuda::destroyEvent(e);
  // The counter is left allocated: a stream may still read it.
}

void DeviceQueue::freeSlot(Slot& slot) {
  if (!slot.recorded || eventDoneWithin(slot.released, comm_.timeoutMs())) {
    cuda::freePinned(slot.memory);
  } else {
    STRATA_WARN("device staging: a stream has not copied out of a staging slot of %zu bytes; it is left "
                "allocated rather than freed under the copy", slot.bytes);
  }
  cuda::destroyEvent(slot.released);
  slot = Slot{};
}

uint8_t* DeviceQueue::beginStep(size_t bytes, void* stream) {
  DeviceScope scope(device_);
  Slot& slot = slotOf(issued_ + 1);
  if (slot.bytes < bytes) {
    Slot bigger;
    bigger.bytes = slotSizeFor(bytes);
    void* memory = nullptr;
    cudaOk(cuda::allocPinned(bigger.bytes, &memory));
    bigger.memory = static_cast<uint8_t*>(memory);
    std::string e = cuda::createEvent(&bigger.released);
    if (!e.empty()) {
      cuda::freePinned(memory);
      fail(strataSystemError, "%s", e.c_str());
    }
    if (slot.memory) retired_.push_back(slot);
    else cuda::destroyEvent(slot.released);
    slot = bigger;
  }
  if (slot.recorded) cudaOk(cuda::streamWaitEvent(stream, slot.released));
  return slot.memory;
}

uint64_t DeviceQueue::submitStep(void* stream, std::function<void()> run) {
  DeviceScope scope(device_);
  void* ready = takeEvent();
  std::string e = cuda::recordEvent(ready, stream);
  if (!e.empty()) {
    giveEvent(ready);
    fail(strataSystemError, "%s", e.c_str());
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(Step{++issued_, ready, std::move(run)});
  }
  wake_.notify_all();
  return issued_;
}

void DeviceQueue::waitStep(uint64_t ticket, void* stream) {
  DeviceScope scope(device_);
  cudaOk(cuda::streamWaitCounter(stream, counter_, ticket, comm_.config().deviceWaitKernel));
}

void DeviceQueue::endStep(uint64_t ticket, void* stream) {
  DeviceScope scope(device_);
  Slot& slot = slotOf(ticket);
  cudaOk(cuda::recordEvent(slot.released, stream));
  slot.recorded = true;
}

IpcPeers* DeviceQueue::ipcPeers() {
  if (!ipcAsked_) {
    drain();  // the exchange runs on this thread, over links the proxy may be using
    ipcAsked_ = true;
    ipc_ = IpcPeers::connect(comm_, device_, slotBytes_, slots());
  }
  return ipc_.get();
}

void DeviceQueue::drain() {
  std::unique_lock<std::mutex> lock(mu_);
  auto timeout = std::chrono::milliseconds(comm_.timeoutMs());
  if (!settled_.wait_for(lock, timeout, [&] { return completed_ == issued_; }))
    fail(strataTimeout,
         "device operations enqueued earlier did not finish within %d ms (%llu of %llu steps ran; has their "
         "stream reached them?)",
         comm_.timeoutMs(), (unsigned long long)completed_, (unsigned long long)issued_);
}

bool DeviceQueue::idle() {
  std::lock_guard<std::mutex> lock(mu_);
  return completed_ == issued_;
}

void* DeviceQueue::takeEvent() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!freeEvents_.empty()) {
      void* e = freeEvents_.back();
      freeEvents_.pop_back();
      return e;
    }
  }
  void* e = nullptr;
  cudaOk(cuda::createEvent(&e));
  return e;
}

void DeviceQueue::giveEvent(void* event) {
  std::lock_guard<std::mutex> lock(mu_);
  freeEvents_.push_back(event);
}

// Polls the ready event (as GpuPoll says: a step's copies in are usually
// done or nearly so). Gives up when the communicator fails (its steps are
// skipped).
bool DeviceQueue::waitReady(void* event) {
  GpuPoll poll;
  while (true) {
    bool done = false;
    std::string e = cuda::queryEvent(event, &done);
    if (!e.empty()) {
      comm_.markFailed(strataSystemError, "device staging: " + e);
      return false;
    }
    if (done) return true;
    if (comm_.failed()) return false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return false;
    }
    poll.pause();
  }
}

void DeviceQueue::runStep(Step& step) {
  if (!waitReady(step.ready) || comm_.failed()) return;
  try {
    step.run();
  } catch (const Error& e) {
    STRATA_WARN("device operation failed (rank %d): %s", comm_.rank(), e.what());
    comm_.markFailed(e.code(), e.what());
  } catch (const std::exception& e) {
    STRATA_WARN("device operation failed (rank %d): %s", comm_.rank(), e.what());
    comm_.markFailed(strataInternalError, e.what());
  }
}

void DeviceQueue::proxyLoop() {
  if (std::string e = cuda::setDevice(device_); !e.empty()) comm_.markFailed(strataSystemError, e);
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    Step step = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    runStep(step);
    __atomic_store_n(counter_, step.ticket, __ATOMIC_RELEASE);
    lock.lock();
    freeEvents_.push_back(step.ready);
    completed_ = step.ticket;
    settled_.notify_all();
  }
}

}  // namespace strata
