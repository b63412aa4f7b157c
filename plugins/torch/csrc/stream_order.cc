#include "stream_order.h"

#include <c10/core/Event.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <c10/util/Exception.h>

#ifdef STRATA_TORCH_CUDA
#include <c10/cuda/CUDAStream.h>
#endif

namespace strata_torch {

namespace {

const c10::impl::VirtualGuardImpl& cudaGuardImpl() {
  static const c10::impl::VirtualGuardImpl impl(c10::DeviceType::CUDA);
  return impl;
}

// The one device all of a method's tensors are on; raises when they are on
// several, or on a device strata does not take.
c10::Device deviceOf(const std::vector<at::Tensor>& tensors, const char* method) {
  std::optional<c10::Device> device;
  for (const at::Tensor& t : tensors) {
    if (!t.defined()) continue;  // checkTensor names it
    const c10::Device d = t.device();
    TORCH_CHECK_VALUE(d.is_cpu() || d.is_cuda(), "strata ", method, ": tensors on ", d,
                      " are not supported; strata takes CPU and CUDA tensors");
    if (!device) device = d;
    TORCH_CHECK_VALUE(*device == d, "strata ", method, ": the tensors are on ", *device, " and on ", d,
                      "; all of one call's tensors must be on one device");
  }
  return device.value_or(c10::Device(c10::kCPU));
}

}  // namespace

c10::Stream CommStreams::forDevice(c10::Device device) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const c10::Stream& s : streams_)
    if (s.device() == device) return s;
  streams_.push_back(cudaGuardImpl().getStreamFromGlobalPool(device, /*isHighPriority=*/false));
  return streams_.back();
}

void* cudaStreamOf(const c10::Stream& stream) {
#ifdef STRATA_TORCH_CUDA
  return c10::cuda::CUDAStream(stream).stream();
#else
  return stream.native_handle();
#endif
}

c10::Stream currentStreamOf(c10::Device device) { return cudaGuardImpl().getStream(device); }

DeviceCall::DeviceCall(CommStreams& streams, const std::vector<at::Tensor>& tensors, const char* method) {
  const c10::Device device = deviceOf(tensors, method);
  if (!device.is_cuda()) return;
  const c10::Stream comm = streams.forDevice(device);
  c10::Event callerDone(c10::DeviceType::CUDA);
  callerDone.record(currentStreamOf(device));
  callerDone.block(comm);
  for (const at::Tensor& t : tensors)
    if (t.defined() && t.storage().data_ptr().get() != nullptr)
      cudaGuardImpl().recordDataPtrOnStream(t.storage().data_ptr(), comm);
  stream_ = comm;
  current_.emplace(comm);
}

}  // namespace strata_torch
