#include "op_queue.h"

#include <c10/util/Exception.h>

namespace strata_torch {

OpQueue::OpQueue(std::function<void(Batch&)> run, bool overlap) : run_(std::move(run)), overlap_(overlap) {
  if (overlap_) thread_ = std::thread([this] { loop(); });
}

OpQueue::~OpQueue() { stop("strata: the process group was destroyed before this operation ran"); }

void OpQueue::push(Batch batch, bool callerWaits) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) {
      batch.work->complete(distBackendError(stopReason_));
      return;
    }
    if (overlap_ && !(callerWaits && queue_.empty() && !busy_)) {
      queue_.push_back(std::move(batch));
      wake_.notify_one();
      return;
    }
    busy_ = true;  // the worker leaves later batches until this one is done
  }
  execute(batch);
  std::lock_guard<std::mutex> lock(mutex_);
  busy_ = false;
  wake_.notify_one();
}

void OpQueue::stop(const std::string& why) {
  std::deque<Batch> unstarted;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
    if (stopReason_.empty()) stopReason_ = why;
    unstarted.swap(queue_);
    wake_.notify_all();
  }
  for (Batch& b : unstarted) b.work->complete(distBackendError(why));
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void OpQueue::execute(Batch& batch) {
  std::exception_ptr error;
  try {
    run_(batch);
  } catch (...) {
    error = std::current_exception();
  }
  auto work = batch.work;
  batch.ops.clear();  // release the captured tensors before anyone sees completion
  work->complete(error);
}

void OpQueue::loop() {
  for (;;) {
    Batch batch;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || (!queue_.empty() && !busy_); });
      if (queue_.empty()) return;
      batch = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
    }
    execute(batch);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      busy_ = false;
    }
  }
}

}  // namespace strata_torch
