// A CPU stand-in for a CUDA device (STRATA_CUDA=EMULATED: the sanitizer builds),
// so that the device path's own logic (src/device: the queue, its proxy and
// counter, pinned staging, cuda_ipc's exchange and steps) and the GPU tier's
// multi-process tests run in CI, which has no GPU. Device memory is host memory
// in a memfd, which another process maps through /proc/<pid>/fd/<fd> (standing
// in for CUDA IPC); a stream is a thread that runs its work in order; an event
// is a position in a stream; kernels run their bodies on the CPU
// (host_bodies.h). It models CUDA's ordering rules, not its speed or hardware:
// the GPU tier on a real device remains the test of those.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace strata::cuda::emulated {

// How far a stream has got: shared with the events recorded on it, which
// outlive the stream as CUDA's do.
class Progress {
 public:
  uint64_t enqueued() const;
  bool reached(uint64_t position) const;  // the work up to `position` has run
  void waitFor(uint64_t position) const;

 private:
  friend class Stream;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::deque<std::function<void()>> work_;
  uint64_t enqueued_ = 0, completed_ = 0;
  bool stop_ = false;
};

// Work run in order by a thread of its own.
class Stream {
 public:
  Stream();
  ~Stream();  // runs what is queued, then stops
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // Queues `work`; returns its position (1, 2, ...).
  uint64_t enqueue(std::function<void()> work);
  const std::shared_ptr<const Progress> progress() const { return progress_; }
  uint64_t enqueued() const { return progress_->enqueued(); }
  bool reached(uint64_t position) const { return progress_->reached(position); }
  void synchronize() const { progress_->waitFor(progress_->enqueued()); }
  bool capturing = false;  // between cudaStreamBeginCapture and EndCapture (tests' shim)

 private:
  void run();
  std::shared_ptr<Progress> progress_;
  std::thread worker_;
};

// The stream a handle names; null is the legacy default stream (made at first use).
Stream& streamOf(void* handle);

// An event: the position of the stream it was last recorded at.
struct Event {
  std::shared_ptr<const Progress> stream;  // never recorded: complete
  uint64_t position = 0;
};

// Device memory, shareable between processes.
void* allocate(size_t bytes);
bool isDevice(const void* ptr);
// What another process needs to map an allocation (fits cuda::kIpcHandleBytes).
struct Export {
  uint64_t magic;
  int64_t pid, fd;
  uint64_t bytes;
};
bool exportOf(const void* base, Export* out);
void* mapExport(const Export& e);  // null when it cannot
// Frees an allocation of this process or unmaps another's.
void unmap(void* base);

}  // namespace strata::cuda::emulated
