// Where a buffer lives. The seam for device buffers: today a device pointer
// is reported so the API can refuse it clearly (strataUnsupported); the CUDA
// issue routes such buffers to the device path instead.
#pragma once

namespace strata {

enum class MemoryKind { kHost, kDevice };

// Uses cudaPointerGetAttributes when the process has already loaded the CUDA
// runtime (a process without it cannot hold device pointers); checked at the
// first call, so load CUDA before the first collective.
MemoryKind memoryKindOf(const void* ptr);

}  // namespace strata
