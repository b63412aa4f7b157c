#include "work.h"

#include <ATen/core/ivalue.h>
#include <c10/util/Exception.h>

namespace strata_torch {

StrataWork::StrataWork(int rank, c10d::OpType type, int sourceRank)
    : c10d::Work(rank, type),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))),
      sourceRank_(sourceRank) {}

void StrataWork::addOutputs(const std::vector<at::Tensor>& tensors) {
  outputs_.insert(outputs_.end(), tensors.begin(), tensors.end());
}

void StrataWork::complete(std::exception_ptr error) {
  finish(error);
  if (error)
    future_->setError(error);
  else
    future_->markCompleted(c10::IValue(outputs_));
}

c10::intrusive_ptr<c10::ivalue::Future> StrataWork::getFuture() { return future_; }

std::vector<at::Tensor> StrataWork::result() { return outputs_; }

int StrataWork::sourceRank() const {
  if (sourceCell_) {
    int from = sourceCell_->load();
    TORCH_CHECK(from >= 0, "strata: the source of a receive from any rank is known once it has completed");
    return from;
  }
  TORCH_CHECK(sourceRank_ >= 0, "strata: sourceRank() is only defined for receives");
  return sourceRank_;
}

// As c10d::Work::wait, but a timeout raises DistBackendError like strata's own failures.
bool StrataWork::wait(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (timeout == kNoTimeout) {
    cv_.wait(lock, [&] { return completed_; });
  } else if (!cv_.wait_for(lock, timeout, [&] { return completed_; })) {
    C10_THROW_ERROR(DistBackendError, "strata: the operation did not complete within the wait() timeout of " +
                                          std::to_string(timeout.count()) + " ms");
  }
  if (exception_) std::rethrow_exception(exception_);
  return true;
}

}  // namespace strata_torch
