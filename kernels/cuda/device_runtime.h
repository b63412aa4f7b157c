// The CUDA runtime calls of the device path (src/device), behind an interface
// that includes no CUDA header, so that everything above it builds without
// CUDA. Streams and events are passed as void* (cudaStream_t / cudaEvent_t).
// Every call returns "" on success, otherwise a sentence naming the call and
// CUDA's error; a build without nvcc gets no_cuda.cc, whose calls say so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace strata::cuda {

// The device that owns `ptr` (a device allocation), in *device.
std::string deviceOfPointer(const void* ptr, int* device);
// The calling thread's current device, and setting it.
std::string currentDevice(int* device);
std::string setDevice(int device);

// Pinned host memory that every device can reach (portable, mapped; with
// unified addressing its host address is also its device address).
std::string allocPinned(size_t bytes, void** ptr);
void freePinned(void* ptr);

// Device memory (cudaMalloc, so that CUDA IPC can export it).
std::string allocDevice(size_t bytes, void** ptr);
void freeDevice(void* ptr);

// CUDA IPC between processes of one host: a handle (a cudaIpcMemHandle_t)
// naming a device allocation of this process, and another process's
// allocation mapped into this one (peer access enabled as needed; ranks on
// one GPU work too). A handle cannot be opened by the process that made it.
constexpr size_t kIpcHandleBytes = 64;
std::string ipcExport(void* ptr, uint8_t handle[kIpcHandleBytes]);
std::string ipcOpen(const uint8_t handle[kIpcHandleBytes], void** ptr);
void ipcClose(void* ptr);

// A stream of strata's own (non-blocking: it never waits for the legacy
// default stream), and waiting on the host until its work is done.
std::string createStream(void** stream);
void destroyStream(void* stream);
std::string streamSynchronize(void* stream);

// Events without timing, for ordering only.
std::string createEvent(void** event);
void destroyEvent(void* event);
std::string recordEvent(void* event, void* stream);
// *done: whether the work recorded before the event has finished.
std::string queryEvent(void* event, bool* done);
// Work enqueued on `stream` after this waits for `event`'s recorded work.
std::string streamWaitEvent(void* stream, void* event);

// Asynchronous copies on `stream` between any two of host and device memory.
std::string copyAsync(void* dst, const void* src, size_t bytes, void* stream);
// `rows` rows of `rowBytes` each, rows `dstPitch` / `srcPitch` bytes apart.
std::string copy2DAsync(void* dst, size_t dstPitch, const void* src, size_t srcPitch, size_t rowBytes,
                        size_t rows, void* stream);

// Work enqueued on `stream` after this waits until *counter >= value, where
// counter lives in allocPinned memory and the host raises it. Uses the
// driver's stream memory operation (cuStreamWaitValue64) where the device
// has it, else (or with pollWithKernel, STRATA_DEVICE_WAIT_KERNEL=1) a
// one-thread kernel that polls the counter.
std::string streamWaitCounter(void* stream, const uint64_t* counter, uint64_t value, bool pollWithKernel);

// Whether `stream` is being captured into a CUDA graph.
std::string streamIsCapturing(void* stream, bool* capturing);

}  // namespace strata::cuda
