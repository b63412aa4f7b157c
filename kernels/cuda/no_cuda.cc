// The CUDA kernels' interface in a build without nvcc: no devices, and every
// launch refused with a sentence saying how to get them.
#include "kernels/cuda/cuda_kernels.h"

namespace strata::cuda {

bool built() { return false; }

int visibleDevices() { return 0; }

namespace {
const char* const kWithoutCuda =
    "this strata was built without CUDA (nvcc was not found when it was configured; install the CUDA toolkit "
    "or set CMAKE_CUDA_COMPILER and rebuild)";
}  // namespace

std::string enqueueReduceCopy(const ReduceCopyArgs&, strataDataType_t, strataRedOp_t, void*) { return kWithoutCuda; }

std::string enqueueMultiCopy(const CopySegment*, int, uint64_t, void*) { return kWithoutCuda; }

}  // namespace strata::cuda
