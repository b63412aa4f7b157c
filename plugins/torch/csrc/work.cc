#include "work.h"

#include <ATen/core/ivalue.h>
#include <ATen/ops/view_as_real.h>
#include <c10/core/StreamGuard.h>
#include <c10/util/Exception.h>

#include <mutex>
#include <set>
#include <thread>

#include "stream_order.h"

namespace strata_torch {

std::exception_ptr distBackendError(const std::string& what) {
  try {
    C10_THROW_ERROR(DistBackendError, what);
  } catch (...) {
    return std::current_exception();
  }
}

std::string CommLink::failure() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!comm_) return "";
  strataResult_t async = strataSuccess;
  if (strataCommGetAsyncError(comm_, &async) != strataSuccess || async == strataSuccess) return "";
  return std::string("strata: the communicator failed (") + strataGetErrorString(async) +
         "): " + strataGetLastError(comm_);
}

void CommLink::cut() {
  std::lock_guard<std::mutex> lock(mutex_);
  comm_ = nullptr;
}

namespace {

// gloo's names for the operations its profiler events carry (the coalesced
// all-reduce and all-gather are recorded as the plain ones, as gloo does).
const char* operationName(c10d::OpType type) {
  using c10d::OpType;
  if (CoalescedOpTypes::kOwn && type == CoalescedOpTypes::kAllGather) return "all_gather_into_tensor_coalesced";
  if (CoalescedOpTypes::kOwn && type == CoalescedOpTypes::kReduceScatter) return "reduce_scatter_tensor_coalesced";
  switch (type) {
    case OpType::BROADCAST: return "broadcast";
    case OpType::ALLREDUCE: case OpType::ALLREDUCE_COALESCED: return "all_reduce";
    case OpType::REDUCE: return "reduce";
    case OpType::ALLGATHER: case OpType::ALLGATHER_COALESCED: return "all_gather";
    case OpType::_ALLGATHER_BASE: return "all_gather_into_tensor";
    case OpType::GATHER: return "gather";
    case OpType::SCATTER: return "scatter";
    case OpType::REDUCE_SCATTER: return "reduce_scatter";
    case OpType::_REDUCE_SCATTER_BASE: return "reduce_scatter_tensor";
    case OpType::ALLTOALL_BASE: case OpType::ALLTOALL: return "all_to_all";
    case OpType::SEND: return "send";
    case OpType::RECV: return "recv";
    case OpType::RECVANYSOURCE: return "recvAnySource";
    case OpType::BARRIER: return "barrier";
    case OpType::COALESCED: return "coalesced";
    default: return "operation";
  }
}

std::optional<std::vector<at::Tensor>> profiledShapes(const char* title, const std::vector<at::Tensor>& inputs) {
  if (!title || inputs.empty()) return std::nullopt;
  std::vector<at::Tensor> out;
  out.reserve(inputs.size());
  for (const at::Tensor& t : inputs)
    out.push_back(t.defined() && t.is_complex() && !t.is_conj() && t.layout() == at::kStrided ? at::view_as_real(t) : t);
  return out;
}

}  // namespace

ProfilingTitles::ProfilingTitles(const std::string& backend) {
  static std::mutex mutex;
  static std::set<std::string> interned;  // nodes never move: their c_str() stays valid
  std::lock_guard<std::mutex> lock(mutex);
  for (size_t t = 0; t < titles_.size(); ++t)
    titles_[t] = interned.insert(backend + ":" + operationName(c10d::OpType(t))).first->c_str();
}

StrataWork::StrataWork(int rank, c10d::OpType type, std::shared_ptr<CommLink> link, int sourceRank,
                       const char* profilingTitle, const std::vector<at::Tensor>& inputs)
    : c10d::Work(rank, type, profilingTitle, profiledShapes(profilingTitle, inputs)),
      sourceRank_(sourceRank),
      link_(std::move(link)) {}

void StrataWork::runsOn(const std::optional<c10::Stream>& stream) {
  const c10::Device device = stream ? stream->device() : c10::Device(c10::kCPU);
  if (future_.defined()) {
    const c10::Device placed = stream_ ? stream_->device() : c10::Device(c10::kCPU);
    TORCH_CHECK_VALUE(placed == device, "strata: a coalesced batch must stay on one device; it began on ", placed,
                      " and this operation is on ", device);
    return;
  }
  std::vector<c10::Device> devices;
  if (stream) {
    devices.push_back(device);
    stream_ = stream;
    endEvent_.emplace(c10::DeviceType::CUDA);
  }
  future_ = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()), devices);
}

void StrataWork::addOutputs(const std::vector<at::Tensor>& tensors) {
  outputs_.insert(outputs_.end(), tensors.begin(), tensors.end());
}

void StrataWork::complete(std::exception_ptr error) {
  if (!future_.defined()) runsOn(std::nullopt);  // an empty coalesced batch
  if (stream_ && !error) endEvent_->record(*stream_);
  finish(error);
  if (error) {
    future_->setError(error);
  } else {
    // A CUDA future records its own events on the current stream: the communication stream.
    std::optional<c10::StreamGuard> onComm;
    if (stream_) onComm.emplace(*stream_);
    future_->markCompleted(c10::IValue(outputs_));
  }
}

c10::intrusive_ptr<c10::ivalue::Future> StrataWork::getFuture() {
  TORCH_CHECK(future_.defined(), "strata: getFuture() on a coalesced batch before endCoalescing");
  return future_;
}

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

void StrataWork::waitRan(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (timeout == kNoTimeout) {
    cv_.wait(lock, [&] { return completed_; });
  } else if (!cv_.wait_for(lock, timeout, [&] { return completed_; })) {
    C10_THROW_ERROR(DistBackendError, "strata: the operation did not complete within the wait() timeout of " +
                                          std::to_string(timeout.count()) + " ms");
  }
  if (exception_) std::rethrow_exception(exception_);
}

void StrataWork::raiseOnAsyncFailure() const {
  std::string failed = link_ ? link_->failure() : "";
  if (!failed.empty()) C10_THROW_ERROR(DistBackendError, failed);
}

// As c10d::Work::wait, but a timeout raises DistBackendError like strata's own failures.
bool StrataWork::wait(std::chrono::milliseconds timeout) {
  const auto start = std::chrono::steady_clock::now();
  waitRan(timeout);
  if (!stream_) return true;
  raiseOnAsyncFailure();
  endEvent_->block(currentStreamOf(stream_->device()));
  if (timeout == kNoTimeout) return true;
  // A timeout asks for the result on the host too, as ProcessGroupNCCL's wait(timeout) does.
  while (!endEvent_->query()) {
    raiseOnAsyncFailure();
    if (std::chrono::steady_clock::now() - start > timeout)
      C10_THROW_ERROR(DistBackendError, "strata: the operation did not finish on the GPU within the wait() timeout of " +
                                            std::to_string(timeout.count()) + " ms");
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  raiseOnAsyncFailure();
  return true;
}

void StrataWork::synchronize() {
  if (!stream_) return;
  waitRan(kNoTimeout);
  endEvent_->block(currentStreamOf(stream_->device()));
}

bool StrataWork::isCompleted() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!completed_) return false;
    if (!stream_ || exception_) return true;
  }
  return endEvent_->query();
}

std::exception_ptr StrataWork::exception() const {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (exception_ || !stream_ || !completed_) return exception_;
  }
  std::string failed = link_ ? link_->failure() : "";
  return failed.empty() ? nullptr : distBackendError(failed);
}

}  // namespace strata_torch
