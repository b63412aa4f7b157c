// The Work handle a StrataBackend returns, and the steps of one queued
// operation. A worker thread runs operations; the handle completes (and its
// future completes with the output tensors, as DDP's reducer needs) when the
// worker has run it, or carries the exception strata's failure became.
#pragma once

#include <torch/csrc/distributed/c10d/Work.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

namespace strata_torch {

// One operation in three parts: packing before the strata calls, the calls
// themselves (a coalesced batch issues all of its calls inside one
// strataGroupStart/End), and unpacking after. Captured tensors stay alive
// until the steps are destroyed, after the operation ran.
struct OpSteps {
  std::function<void()> before;
  std::function<void()> issue;
  std::function<void()> after;
};

class StrataWork : public c10d::Work {
 public:
  StrataWork(int rank, c10d::OpType type, int sourceRank = -1);

  // Tensors the future completes with (the operation's outputs).
  void addOutputs(const std::vector<at::Tensor>& tensors);
  // Called once by the worker: success when error is null.
  void complete(std::exception_ptr error);

  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  std::vector<at::Tensor> result() override;
  int sourceRank() const override;
  // A receive from any rank: its source is known when it completes, and the
  // operation writes it into `cell`.
  void useSourceCell(std::shared_ptr<std::atomic<int>> cell) { sourceCell_ = std::move(cell); }
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;

 private:
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  int sourceRank_;
  std::shared_ptr<std::atomic<int>> sourceCell_;
};

}  // namespace strata_torch
