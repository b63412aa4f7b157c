// The CUDA kernels' host interface, for code that includes no CUDA header.
// One kernel does every reduction and copy of the device path: it reads up
// to kMaxSources buffers, combines them element by element with the op in a
// fixed order (source 0 first), optionally divides by `divisor` (Avg's last
// step), and writes the result to up to kMaxDestinations buffers in the same
// pass ("fused reduce-and-copy": a pipeline step reads its inputs once).
// float16 / bfloat16 accumulate in float32 and are rounded once.
//
// Built from kernels/cuda/reduce_copy.cu for sm_80 and sm_90 (+ PTX) when
// nvcc is found at configure time; a build without nvcc gets no_cuda.cc,
// whose functions say so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "strata/strata.h"

namespace strata::cuda {

constexpr int kMaxSources = 8;
constexpr int kMaxDestinations = 2;

// What one launch reads and writes. Plain data: passed to the kernel by value.
struct ReduceCopyArgs {
  const void* src[kMaxSources] = {};
  void* dst[kMaxDestinations] = {};
  int nsrc = 0;
  int ndst = 0;
  uint64_t count = 0;    // elements
  uint64_t divisor = 1;  // > 1: the combined value is divided by it (Avg)
};

// Whether this build has the CUDA kernels.
bool built();

// Devices this process sees; 0 when there are none or CUDA is unusable here
// (no driver, no device, or a build without CUDA).
int visibleDevices();

// Loads every strata kernel onto the current device now. CUDA loads a kernel
// lazily by default (CUDA_MODULE_LOADING=LAZY since 12.2), at its first use,
// and a load may wait until the whole context is idle; the device path's
// streams wait on the host for work whose kernels its proxy launches, so a
// first launch there could wait for itself. The device queue calls this
// before any of its streams waits, as NCCL loads its kernels at init.
// Returns "" or a sentence naming the kernel CUDA could not load.
std::string loadKernels();

// Enqueues the reduce-and-copy on `stream` (a cudaStream_t; nullptr = the
// legacy default stream) and returns at once. Avg is Sum with args.divisor.
// Returns "" on success, otherwise a sentence naming the problem (bad
// arguments, or the launch error CUDA reported).
std::string enqueueReduceCopy(const ReduceCopyArgs& args, strataDataType_t dtype, strataRedOp_t op,
                              void* stream);

// For strata-gpu-kernels: the float16 / bfloat16 sum as built before the
// 16-bit kernels were bounded to two resident blocks a multiprocessor (one
// block, registers unbounded), so that one run times the two side by side.
std::string enqueueReduceCopyUnboundedRegisters(const ReduceCopyArgs& args, strataDataType_t dtype,
                                                void* stream);

// One piece of a multi-tensor copy: `bytes` from src to dst. firstChunk is
// filled by planMultiCopy.
struct CopySegment {
  const void* src = nullptr;
  void* dst = nullptr;
  uint64_t bytes = 0;
  uint64_t firstChunk = 0;  // index of the segment's first chunk among all segments'
};

// A multi-tensor copy is cut into chunks of kCopyChunkBytes (a segment's last
// chunk may be shorter); the blocks of one launch take chunks in turn, so a
// launch of many small tensors and one of a few large ones both keep every
// multiprocessor busy (fusion's pack and unpack: one launch per bucket).
constexpr uint64_t kCopyChunkBytes = 64 * 1024;

// Fills each segment's firstChunk and returns the total number of chunks.
uint64_t planMultiCopy(CopySegment* segments, int n);

// Enqueues the copy of every segment on `stream` and returns at once.
// `table` holds n planned segments in memory the device can read (device
// memory, or pinned host memory), and must stay valid until the copy has run.
// Segments may have any size (0 too) and alignment; none may overlap another's
// destination. Returns "" on success, otherwise a sentence naming the problem.
std::string enqueueMultiCopy(const CopySegment* table, int n, uint64_t chunks, void* stream);

// A multi-tensor copy whose table travels in the launch's own parameters (by
// value; the kernel reads it in place through __grid_constant__), so the
// caller keeps nothing alive once it is enqueued: the device path's staging
// copies, which the host enqueues without knowing when the GPU will run them.
// 120 segments of 32 bytes stay within the 4 KiB of parameters that every
// CUDA version takes.
constexpr int kInlineCopySegments = 120;
struct InlineCopyTable {
  CopySegment segments[kInlineCopySegments];
  int n = 0;
  uint64_t chunks = 0;
};

// The launches that copy `segments`: consecutive groups of up to
// kInlineCopySegments, each planned (firstChunk within its own launch).
std::vector<InlineCopyTable> inlineCopyTables(const CopySegment* segments, int n);

// Enqueues one launch per table of inlineCopyTables(segments, n) on `stream`
// and returns at once; the segments may be freed as soon as it returns.
// Pointers must be usable on the stream's device (device memory, or mapped
// pinned host memory). Returns "" on success, otherwise a sentence.
std::string enqueueInlineMultiCopy(const CopySegment* segments, int n, void* stream);

}  // namespace strata::cuda
