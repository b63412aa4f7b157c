// The CUDA kernels' and device runtime's interface in a build without nvcc:
// no devices, and every call refused with a sentence saying how to get them.
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/device_runtime.h"

namespace strata::cuda {

bool built() { return false; }

int visibleDevices() { return 0; }

std::string loadKernels() { return ""; }  // nothing to load

namespace {
const char* const kWithoutCuda =
    "this strata was built without CUDA (nvcc was not found when it was configured; install the CUDA toolkit "
    "or set CMAKE_CUDA_COMPILER and rebuild)";
}  // namespace

std::string enqueueReduceCopy(const ReduceCopyArgs&, strataDataType_t, strataRedOp_t, void*) { return kWithoutCuda; }

std::string enqueueMultiCopy(const CopySegment*, int, uint64_t, void*) { return kWithoutCuda; }
std::string enqueueInlineMultiCopy(const CopySegment*, int, void*) { return kWithoutCuda; }

std::string deviceOfPointer(const void*, int*) { return kWithoutCuda; }
std::string currentDevice(int*) { return kWithoutCuda; }
std::string setDevice(int) { return kWithoutCuda; }
std::string allocPinned(size_t, void** ptr) {
  *ptr = nullptr;
  return kWithoutCuda;
}
void freePinned(void*) {}
std::string allocDevice(size_t, void** ptr) {
  *ptr = nullptr;
  return kWithoutCuda;
}
void freeDevice(void*) {}
std::string ipcExport(void*, uint8_t*) { return kWithoutCuda; }
std::string ipcOpen(const uint8_t*, void** ptr) {
  *ptr = nullptr;
  return kWithoutCuda;
}
void ipcClose(void*) {}
std::string createStream(void** stream) {
  *stream = nullptr;
  return kWithoutCuda;
}
void destroyStream(void*) {}
std::string streamSynchronize(void*) { return kWithoutCuda; }
std::string createEvent(void** event) {
  *event = nullptr;
  return kWithoutCuda;
}
void destroyEvent(void*) {}
std::string recordEvent(void*, void*) { return kWithoutCuda; }
std::string queryEvent(void*, bool* done) {
  *done = false;
  return kWithoutCuda;
}
std::string streamWaitEvent(void*, void*) { return kWithoutCuda; }
std::string copyAsync(void*, const void*, size_t, void*) { return kWithoutCuda; }
std::string copy2DAsync(void*, size_t, const void*, size_t, size_t, size_t, void*) { return kWithoutCuda; }
std::string streamWaitCounter(void*, const uint64_t*, uint64_t, bool) { return kWithoutCuda; }
std::string streamIsCapturing(void*, bool* capturing) {
  *capturing = false;
  return kWithoutCuda;
}

}  // namespace strata::cuda
