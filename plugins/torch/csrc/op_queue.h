// Runs a backend's operations on one thread of its own, one batch at a time,
// in the order they were submitted: every rank submits in program order, so
// every rank issues the same collectives in the same order, while the caller
// goes on computing (async_op=True, DDP's overlapping buckets).
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
  explicit OpQueue(std::function<void(Batch&)> run);
  ~OpQueue();

  void push(Batch batch);
  // Waits for the batches already submitted to finish.
  void drain();
  // Ends the thread: the running batch finishes (strata's timeout bounds it);
  // batches not started fail with `why`. Later pushes fail at once.
  void stop(const std::string& why);

 private:
  void loop();

  std::function<void(Batch&)> run_;
  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<Batch> queue_;
  bool busy_ = false;
  bool stopping_ = false;
  std::string stopReason_;
  std::thread thread_;
};

}  // namespace strata_torch
