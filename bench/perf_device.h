// strata-perf -G: buffers in CUDA device memory and one stream per rank.
// Built with the CUDA runtime when nvcc is found (perf_device.cc), else
// perf_device_none.cc, whose ready() says the build has no CUDA.
#pragma once

#include <cstddef>
#include <string>

namespace perfdev {

// Selects the device for local rank `localRank` and makes the stream; false
// with *why when that is impossible (no CUDA in this build, no device).
bool ready(int localRank, std::string* why);
void* allocate(size_t bytes);  // device memory; exits with a message on failure
void release(void* ptr);
void upload(void* device, const void* host, size_t bytes);
void download(void* host, const void* device, size_t bytes);
void* stream();                // the rank's cudaStream_t
void synchronize();            // waits for the stream

}  // namespace perfdev
