// Where a buffer lives: host buffers run on the caller's thread, device
// buffers go to the device path (src/device).
#pragma once

#include <cstdint>

namespace strata {

enum class MemoryKind { kHost, kDevice };

// Asks the CUDA driver (cuPointerGetAttribute) when the process has already
// loaded it, else a loaded CUDA runtime; a process with neither cannot hold
// device pointers. While CUDA is absent it is looked for again whenever the
// process has loaded another library. Managed memory counts as host memory.
MemoryKind memoryKindOf(const void* ptr);

// Whether the process can hold device pointers at all (CUDA is loaded, or the
// device is emulated): when not, a caller skips memoryKindOf for each buffer.
// It looks for CUDA again at most once a tick of the kernel's coarse clock
// (1-4 ms), which it reads instead of a precise one (a memory load: repeated
// calls take no precise clock reading, exec/tiny_run.h).
bool deviceMemoryPossible();
// deviceMemoryPossible without a look of its own: true once a look by any
// call found CUDA. Two loads, no clock: for the repeats of a call whose
// buffers a full check found in host memory (runRepeatedCall), which look
// again only when they are timed.
bool deviceMemoryFound();

}  // namespace strata
