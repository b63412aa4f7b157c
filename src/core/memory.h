// Where a buffer lives: host buffers run on the caller's thread, device
// buffers go to the device path (src/device).
#pragma once

namespace strata {

enum class MemoryKind { kHost, kDevice };

// Asks the CUDA driver (cuPointerGetAttribute) when the process has already
// loaded it, else a loaded CUDA runtime; a process with neither cannot hold
// device pointers. While CUDA is absent it is looked for again whenever the
// process has loaded another library. Managed memory counts as host memory.
MemoryKind memoryKindOf(const void* ptr);

// Whether the process can hold device pointers at all (CUDA is loaded, or the
// device is emulated): when not, a caller skips memoryKindOf for each buffer.
bool deviceMemoryPossible();

}  // namespace strata
