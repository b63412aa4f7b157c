// The Work handle a StrataBackend returns, and the steps of one queued
// operation. A worker thread (or the caller's) runs operations; the handle
// completes (and its future completes with the output tensors, as DDP's
// reducer needs) when the operation ran, or carries the exception strata's
// failure became. On CUDA tensors "ran" means "enqueued on the backend's
// communication stream": the handle then follows ProcessGroupNCCL's rules
// (see stream_order.h).
#pragma once

#include <c10/core/Event.h>
#include <c10/core/Stream.h>
#include <strata/strata.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace strata_torch {

// The OpType of the coalesced all_gather_into_tensor and reduce_scatter_tensor:
// newer torch has one for each (2.15 does), older torch (2.11) none, and such
// a call is then typed COALESCED.
template <class E, class = void>
struct TensorCoalescedTypes {
  static constexpr bool kOwn = false;
  static constexpr E kAllGather = E::COALESCED, kReduceScatter = E::COALESCED;
};
template <class E>
struct TensorCoalescedTypes<E, std::void_t<decltype(E::ALLGATHER_INTO_TENSOR_COALESCED),
                                           decltype(E::REDUCE_SCATTER_TENSOR_COALESCED)>> {
  static constexpr bool kOwn = true;
  static constexpr E kAllGather = E::ALLGATHER_INTO_TENSOR_COALESCED;
  static constexpr E kReduceScatter = E::REDUCE_SCATTER_TENSOR_COALESCED;
};
using CoalescedOpTypes = TensorCoalescedTypes<c10d::OpType>;

// One operation in three parts: packing before the strata calls, the calls
// themselves (a coalesced batch issues all of its calls inside one
// strataGroupStart/End), and unpacking after. Captured tensors stay alive
// until the steps are destroyed, after the operation ran.
struct OpSteps {
  std::function<void()> before;
  std::function<void()> issue;
  std::function<void()> after;
};

// The communicator as Work objects reach it: they can outlive the backend,
// which cuts the link before it destroys the communicator.
class CommLink {
 public:
  explicit CommLink(strataComm_t comm) : comm_(comm) {}
  // strata's sentence when the communicator has failed, else empty. A device
  // operation that fails after it was enqueued shows up only here
  // (strataCommGetAsyncError).
  std::string failure();
  void cut();

 private:
  std::mutex mutex_;
  strataComm_t comm_;
};

// A DistBackendError carrying `what`, as an exception_ptr for a Work to complete with.
std::exception_ptr distBackendError(const std::string& what);

// The names torch's profiler shows for a backend's operations:
// "strata:all_reduce" (gloo's and NCCL's "<backend>:<op>" form), made once
// per backend name and kept for the process (RecordFunction keeps the
// pointer, not a copy), so an operation only indexes a table.
class ProfilingTitles {
 public:
  explicit ProfilingTitles(const std::string& backend);
  const char* of(c10d::OpType type) const { return titles_[size_t(type)]; }

 private:
  std::array<const char*, 256> titles_;  // by OpType (a uint8_t)
};

class StrataWork : public c10d::Work {
 public:
  // With a profiling title, torch's profiler (when on) records the operation
  // as one asynchronous event from here to complete(), with the shapes of
  // `inputs` (complex ones as their real views, as gloo records them).
  StrataWork(int rank, c10d::OpType type, std::shared_ptr<CommLink> link, int sourceRank = -1,
             const char* profilingTitle = nullptr, const std::vector<at::Tensor>& inputs = {});

  // Where the operation runs: on the CPU (no stream) or on this CUDA
  // communication stream. The first call decides; a later call with another
  // device raises (a coalesced batch must stay on one device).
  void runsOn(const std::optional<c10::Stream>& stream);
  bool placed() const { return future_.defined(); }
  const std::optional<c10::Stream>& stream() const { return stream_; }
  // Tensors the future completes with (the operation's outputs).
  void addOutputs(const std::vector<at::Tensor>& tensors);
  // Called once, by the thread that ran the operation (for CUDA: enqueued
  // it, with the communication stream current): success when error is null.
  void complete(std::exception_ptr error);

  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  std::vector<at::Tensor> result() override;
  int sourceRank() const override;
  // A receive from any rank: its source is known when it completes, and the
  // operation writes it into `cell`.
  void useSourceCell(std::shared_ptr<std::atomic<int>> cell) { sourceCell_ = std::move(cell); }
  // CPU: waits for the operation. CUDA: waits until it is enqueued, then
  // makes the caller's current stream wait for it; with a timeout, also
  // waits on the host for it to finish, raising past the timeout.
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  // CUDA: the caller's current stream waits for the operation (no host wait).
  void synchronize() override;
  // CUDA: done when its end event has passed on the GPU.
  bool isCompleted() override;
  std::exception_ptr exception() const override;

 private:
  // Waits on the host until the operation ran (or was enqueued); rethrows its failure.
  void waitRan(std::chrono::milliseconds timeout);
  // Raises DistBackendError when the communicator failed after enqueueing.
  void raiseOnAsyncFailure() const;

  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  int sourceRank_;
  std::shared_ptr<std::atomic<int>> sourceCell_;
  std::shared_ptr<CommLink> link_;
  std::optional<c10::Stream> stream_;
  std::optional<c10::Event> endEvent_;  // with stream_: recorded there once enqueued
};

}  // namespace strata_torch
