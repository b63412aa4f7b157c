// Runs a backend's operations one batch at a time, in the order they were
// submitted: every rank submits in program order, so every rank issues the
// same collectives in the same order. With a worker thread (overlap), the
// caller goes on computing meanwhile (async_op=True, DDP's overlapping
// buckets). Without one (inline), push() runs the batch on the caller's
// thread: on a host with no spare core per rank a worker could only take
// cycles from the caller's compute, and needs its peers' workers scheduled at
// the same moment to make progress.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "work.h"

namespace strata_torch {

// Operations that complete one Work together: one operation, or everything
// issued between startCoalescing and endCoalescing.
struct Batch {
  std::vector<OpSteps> ops;
  c10::intrusive_ptr<StrataWork> work;
};

class OpQueue {
 public:
  OpQueue(std::function<void(Batch&)> run, bool overlap);
  ~OpQueue();

  // Queues the batch; `callerWaits` (a synchronous call: the caller waits
  // for it anyway) runs it on the caller's thread when nothing is queued or
  // running, which saves the hand-off to the worker and back.
  void push(Batch batch, bool callerWaits = false);
  // Ends the thread: the running batch finishes (strata's timeout bounds it);
  // batches not started fail with `why`. Later pushes fail at once.
  void stop(const std::string& why);

 private:
  void loop();
  // Runs one batch and completes its Work.
  void execute(Batch& batch);

  std::function<void(Batch&)> run_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Batch> queue_;
  bool busy_ = false;
  bool stopping_ = false;
  std::string stopReason_;
  const bool overlap_;
  std::thread thread_;
};

}  // namespace strata_torch
