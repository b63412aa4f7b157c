// The host side of the CUDA kernels, shared by the real launchers and the
// emulated device (STRATA_CUDA=EMULATED): the reduce-and-copy's argument
// check, and the kernels' bodies run on the CPU, one worker after another
// (what a grid of that many GPU threads computes; also for the CPU tests of
// the kernels' indexing).
#pragma once

#include <cstdint>
#include <string>

#include "kernels/cuda/cuda_kernels.h"

namespace strata::cuda {

// "" when a reduce-and-copy of `args` can be launched, else why not (source
// and destination counts, dtype and op, null or misaligned buffers).
std::string checkReduceCopyArgs(const ReduceCopyArgs& args, strataDataType_t dtype, strataRedOp_t op);

// The reduce-and-copy kernel's body for `workers` GPU threads.
void reduceCopyOnHost(strataDataType_t dtype, strataRedOp_t op, const ReduceCopyArgs& a, uint64_t workers);
// The multi-tensor copy's body for `blocks` x `threads` GPU threads, over a
// planned table (planMultiCopy) of `chunks` chunks.
void multiCopyOnHost(const CopySegment* table, int n, uint64_t chunks, uint64_t blocks, uint64_t threads);

}  // namespace strata::cuda
