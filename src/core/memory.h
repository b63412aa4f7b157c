// Where a buffer lives. The seam for device buffers: today a device pointer
// is reported so the API can refuse it clearly (strataUnsupported); the CUDA
// issue routes such buffers to the device path instead.
#pragma once

namespace strata {

enum class MemoryKind { kHost, kDevice };

// Asks the CUDA driver (cuPointerGetAttribute) when the process has already
// loaded it, else a loaded CUDA runtime; a process with neither cannot hold
// device pointers. Looked up at the first call, so load CUDA before the first
// collective. Managed memory counts as host memory (the host can reach it).
MemoryKind memoryKindOf(const void* ptr);

}  // namespace strata
