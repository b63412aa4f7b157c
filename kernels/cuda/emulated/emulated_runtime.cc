// device_runtime.h and cuda_kernels.h on the emulated device
// (emulated_device.h): what src/device calls, with CUDA's ordering rules.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/device_runtime.h"
#include "kernels/cuda/emulated/emulated_device.h"
#include "kernels/cuda/host_bodies.h"

namespace strata::cuda {

using emulated::Event;
using emulated::streamOf;

bool built() { return true; }
int visibleDevices() { return 1; }
std::string loadKernels() { return ""; }  // the emulator's kernels are CPU functions

// STRATA_EMULATED_REDUCE_DELAY_MS=N holds every reduction N ms on its stream:
// a GPU that does not run a step's kernel in time, for the tests.
std::string enqueueReduceCopy(const ReduceCopyArgs& args, strataDataType_t dtype, strataRedOp_t op, void* stream) {
  if (std::string refused = checkReduceCopyArgs(args, dtype, op); !refused.empty()) return refused;
  const char* delay = std::getenv("STRATA_EMULATED_REDUCE_DELAY_MS");
  const int delayMs = delay ? std::atoi(delay) : 0;
  if (args.count)
    streamOf(stream).enqueue([args, dtype, op, delayMs] {
      if (delayMs > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delayMs));
      reduceCopyOnHost(dtype, op, args, 1);
    });
  return "";
}

std::string enqueueMultiCopy(const CopySegment* table, int n, uint64_t chunks, void* stream) {
  streamOf(stream).enqueue([table, n, chunks] { multiCopyOnHost(table, n, chunks, 1, 1); });
  return "";
}

std::string enqueueInlineMultiCopy(const CopySegment* segments, int n, void* stream) {
  streamOf(stream).enqueue([tables = inlineCopyTables(segments, n)] {
    for (const InlineCopyTable& t : tables) multiCopyOnHost(t.segments, t.n, t.chunks, 1, 1);
  });
  return "";
}

std::string deviceOfPointer(const void* ptr, int* device) {
  if (!emulated::isDevice(ptr)) return "cudaPointerGetAttributes (emulated): not device memory";
  *device = 0;
  return "";
}

std::string currentDevice(int* device) {
  *device = 0;
  return "";
}

std::string setDevice(int device) { return device == 0 ? "" : "cudaSetDevice (emulated): only device 0 exists"; }

std::string allocPinned(size_t bytes, void** ptr) {
  *ptr = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
  return *ptr ? "" : "cudaHostAlloc (emulated): out of memory";
}

void freePinned(void* ptr) { std::free(ptr); }

std::string allocDevice(size_t bytes, void** ptr) {
  *ptr = emulated::allocate(bytes);
  return *ptr ? "" : "cudaMalloc (emulated): out of memory";
}

void freeDevice(void* ptr) { emulated::unmap(ptr); }

static_assert(sizeof(emulated::Export) <= kIpcHandleBytes, "an emulated export must fit an IPC handle");

std::string ipcExport(void* ptr, uint8_t handle[kIpcHandleBytes]) {
  emulated::Export e{};
  if (!emulated::exportOf(ptr, &e)) return "cudaIpcGetMemHandle (emulated): not the base of a device allocation";
  std::memset(handle, 0, kIpcHandleBytes);
  std::memcpy(handle, &e, sizeof e);
  return "";
}

std::string ipcOpen(const uint8_t handle[kIpcHandleBytes], void** ptr) {
  *ptr = nullptr;
  // Fault injection for the tests of cuda_ipc's fallback (read at each call).
  if (const char* refuse = std::getenv("STRATA_EMULATED_IPC_OPEN_FAILS"); refuse && *refuse == '1')
    return "cudaIpcOpenMemHandle (emulated): refused (STRATA_EMULATED_IPC_OPEN_FAILS=1)";
  emulated::Export e{};
  std::memcpy(&e, handle, sizeof e);
  *ptr = emulated::mapExport(e);
  return *ptr ? "" : "cudaIpcOpenMemHandle (emulated): cannot map the handle";
}

void ipcClose(void* ptr) { emulated::unmap(ptr); }

std::string createStream(void** stream) {
  *stream = new emulated::Stream;
  return "";
}

void destroyStream(void* stream) {
  if (!stream) return;
  streamOf(stream).synchronize();
  delete static_cast<emulated::Stream*>(stream);
}

std::string streamSynchronize(void* stream) {
  streamOf(stream).synchronize();
  return "";
}

std::string createEvent(void** event) {
  *event = new Event;
  return "";
}

void destroyEvent(void* event) { delete static_cast<Event*>(event); }

std::string recordEvent(void* event, void* stream) {
  emulated::Stream& s = streamOf(stream);
  *static_cast<Event*>(event) = Event{s.progress(), s.enqueued()};
  return "";
}

std::string queryEvent(void* event, bool* done) {
  const Event& e = *static_cast<const Event*>(event);
  *done = !e.stream || e.stream->reached(e.position);
  return "";
}

std::string streamWaitEvent(void* stream, void* event) {
  const Event e = *static_cast<const Event*>(event);
  if (e.stream) streamOf(stream).enqueue([e] { e.stream->waitFor(e.position); });
  return "";
}

std::string copyAsync(void* dst, const void* src, size_t bytes, void* stream) {
  if (bytes) streamOf(stream).enqueue([=] { std::memmove(dst, src, bytes); });
  return "";
}

std::string copy2DAsync(void* dst, size_t dstPitch, const void* src, size_t srcPitch, size_t rowBytes, size_t rows,
                        void* stream) {
  if (rowBytes && rows)
    streamOf(stream).enqueue([=] {
      for (size_t r = 0; r < rows; ++r)
        std::memmove(static_cast<char*>(dst) + r * dstPitch, static_cast<const char*>(src) + r * srcPitch, rowBytes);
    });
  return "";
}

std::string streamWaitCounter(void* stream, const uint64_t* counter, uint64_t value, bool) {
  streamOf(stream).enqueue([counter, value] {
    while (__atomic_load_n(counter, __ATOMIC_ACQUIRE) < value) std::this_thread::sleep_for(std::chrono::microseconds(20));
  });
  return "";
}

std::string streamIsCapturing(void* stream, bool* capturing) {
  *capturing = streamOf(stream).capturing;
  return "";
}

}  // namespace strata::cuda
