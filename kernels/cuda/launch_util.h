// What the CUDA launchers share: the size of a persistent grid, and error
// sentences.
#pragma once

#include <string>

namespace strata::cuda {

// Blocks of `threads` threads of `kernel` resident at once on `device`
// (multiprocessors x occupancy), measured once per kernel and device.
int residentBlocks(const void* kernel, int device, int threads);

// printf-style sentence for a launcher's error result.
std::string sentence(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace strata::cuda
