// How an operation on CUDA tensors is ordered with the caller's CUDA work,
// as ProcessGroupNCCL orders it. The backend has its own communication
// stream per device. Each call makes that stream wait for the caller's
// current stream, then runs on it: packing copies, temporaries, and strata's
// own calls, which enqueue there and return. An end event recorded there
// afterwards is what Work::wait() makes the caller's stream wait for. The
// caller's tensors are marked as used on the communication stream, so the
// caching allocator hands their memory out again only after the operation.
//
// Everything here but cudaStreamOf() is torch's device-generic stream API
// (c10::Stream, c10::Event), so the plugin builds against CPU-only torch too.
#pragma once

#include <ATen/ATen.h>
#include <c10/core/Stream.h>
#include <c10/core/StreamGuard.h>

#include <mutex>
#include <optional>
#include <vector>

namespace strata_torch {

// The backend's communication streams: one per CUDA device, taken from
// torch's stream pool on first use.
class CommStreams {
 public:
  c10::Stream forDevice(c10::Device device);

 private:
  std::mutex mutex_;
  std::vector<c10::Stream> streams_;
};

// The cudaStream_t behind a torch CUDA stream, for strata's stream argument.
void* cudaStreamOf(const c10::Stream& stream);

// The calling thread's current stream on `device`.
c10::Stream currentStreamOf(c10::Device device);

// One backend method's view of where its tensors are. All of them must be on
// the CPU or all on one CUDA device. For CUDA tensors, from construction to
// the end of the method: the communication stream waits for the caller's
// current stream, the tensors are marked as used on it, and it is the
// current stream (its device the current device), so the method's copies and
// temporary tensors are ordered on it and allocated from its pool.
class DeviceCall {
 public:
  DeviceCall(CommStreams& streams, const std::vector<at::Tensor>& tensors, const char* method);
  DeviceCall(const DeviceCall&) = delete;
  DeviceCall& operator=(const DeviceCall&) = delete;

  // The communication stream; empty for CPU tensors (or none at all).
  const std::optional<c10::Stream>& stream() const { return stream_; }

 private:
  std::optional<c10::Stream> stream_;
  std::optional<c10::StreamGuard> current_;
};

// Every tensor of a method's arguments, for DeviceCall.
inline void appendTensors(std::vector<at::Tensor>& all, const at::Tensor& t) { all.push_back(t); }
inline void appendTensors(std::vector<at::Tensor>& all, const std::vector<at::Tensor>& ts) {
  all.insert(all.end(), ts.begin(), ts.end());
}
inline void appendTensors(std::vector<at::Tensor>& all, const std::vector<std::vector<at::Tensor>>& lists) {
  for (const auto& ts : lists) appendTensors(all, ts);
}
template <class... Args>
std::vector<at::Tensor> tensorsOf(const Args&... args) {
  std::vector<at::Tensor> all;
  (appendTensors(all, args), ...);
  return all;
}

}  // namespace strata_torch
