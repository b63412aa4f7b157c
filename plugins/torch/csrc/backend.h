// StrataBackend: torch.distributed's c10d::Backend over a strata
// communicator. Every method checks its arguments on the caller's thread,
// then queues the operation for the backend's worker thread and returns a
// Work at once; strata errors surface as DistBackendError carrying strata's
// last-error sentence. Operations on CUDA tensors are enqueued on the
// backend's communication stream, ordered after the caller's current stream
// (stream_order.h).
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <memory>

#include "op_queue.h"
#include "stream_order.h"
#include "tensor_args.h"

namespace strata_torch {

// Whether torch waits for the operation right after the call (async_op=False),
// from the options' asyncOp where this torch has it (2.7 and later); older
// ones count as asynchronous.
template <class Opts>
auto callerWaits(const Opts& o, int) -> decltype(o.asyncOp, bool()) {
  return !o.asyncOp;
}
template <class Opts>
bool callerWaits(const Opts&, long) {
  return false;
}

class StrataBackend : public c10d::Backend {
 public:
  // Bootstraps through `store`: rank 0 makes the unique id and publishes it.
  StrataBackend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                std::chrono::milliseconds timeout);
  ~StrataBackend() override;

  const std::string getBackendName() const override { return "strata"; }
  // The name torch's profiler events carry before ":<op>" ("strata" unless
  // the backend was registered under another name); split groups inherit it.
  void setProfilingName(const std::string& name) {
    profilingName_ = name;
    titles_ = ProfilingTitles(name);
  }
  bool supportsSplitting() const override { return true; }
  bool supportsCoalescing() const override { return true; }
  c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Store>& store,
                                          const std::vector<int>& ranks,
                                          const c10::intrusive_ptr<Options>& opts) override;
  c10::intrusive_ptr<Options> getBackendOptions() override;
  void startCoalescing() override;
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;
  void abort() override;
  void shutdown() override;

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& outputSplitSizes,
                                               std::vector<int64_t>& inputSplitSizes,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dstRank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int srcRank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;
  // Rank 0 checks in every rank within opts.timeout and names the ones that
  // did not come (all of them with waitAllRanks), as gloo's does; through the
  // c10d store, so a late rank leaves the communicator usable
  // (monitored_barrier.cc).
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool waitAllRanks) override;
  // Collectives issued on this group so far: the same on every rank of a
  // group that issued the same collectives (point-to-point calls not counted).
  uint64_t getSequenceNumberForGroup() override { return collectivesIssued_; }

 private:
  // Queues one operation (or adds it to the open coalesced batch); `outputs`
  // complete the Work's future. An operation on CUDA tensors (call.stream())
  // is enqueued at once on the caller's thread unless earlier operations are
  // still queued: the caller only waits for the enqueueing.
  // `inputs` are the tensors torch's profiler records the shapes of.
  c10::intrusive_ptr<c10d::Work> submit(c10d::OpType type, const std::vector<at::Tensor>& inputs,
                                        std::vector<at::Tensor> outputs, std::vector<OpSteps> ops, bool waits,
                                        const DeviceCall& call, int sourceRank = -1);
  // Runs a batch on the worker thread (or the caller's), with its
  // communication stream current when it is on CUDA tensors.
  void run(Batch& batch);
  // Raises DistBackendError with strata's sentence unless rc is strataSuccess.
  void check(strataResult_t rc, const char* call) const;
  void checkPeer(int peer, const char* method, const char* what) const;
  // The steps of one allreduce / _allgather_base / _reduce_scatter_base, for reuse by the coalesced forms.
  OpSteps allReduceSteps(const at::Tensor& t, const Reduction& r, strataDataType_t dtype);
  // The all-reduce (sum) of a sparse COO tensor, as gloo's (sparse_allreduce.cc).
  OpSteps sparseAllReduceSteps(const at::Tensor& t);
  OpSteps allGatherSteps(const at::Tensor& output, const at::Tensor& input);
  OpSteps reduceScatterSteps(const at::Tensor& output, const at::Tensor& input, const Reduction& r);

  strataComm_t comm_ = nullptr;
  c10::intrusive_ptr<c10d::Store> store_;  // the group's store (monitoredBarrier)
  uint64_t monitoredBarriers_ = 0;         // calls so far: numbers each call's store keys
  uint64_t collectivesIssued_ = 0;
  std::shared_ptr<CommLink> link_;  // comm_ as Work objects reach it
  CommStreams streams_;
  // The running batch's communication stream (a cudaStream_t), for strata's
  // stream argument; null for CPU tensors. One batch runs at a time.
  strataStream_t stream_ = nullptr;
  std::chrono::milliseconds timeout_;
  std::string profilingName_ = "strata";
  ProfilingTitles titles_{profilingName_};
  std::unique_ptr<OpQueue> queue_;
  bool coalescing_ = false;
  Batch coalesced_;
  std::vector<at::Tensor> coalescedOutputs_;
};

}  // namespace strata_torch
