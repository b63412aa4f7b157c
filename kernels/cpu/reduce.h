// CPU reduction kernels for every dtype x op. One source (reduce_impl.inc) is
// compiled for several instruction sets; the best one the CPU supports is
// chosen once at startup. All pointers may be unaligned; out may alias a or b.
// float16 / bfloat16 are computed in float32 and rounded once per step.
#pragma once

#include <cstddef>
#include <cstdint>

#include "strata/strata.h"

namespace strata::kernels {

// out[i] = a[i] (op) b[i]. op must be Sum, Prod, Max or Min (Avg reduces as Sum).
void reduce(void* out, const void* a, const void* b, size_t count, strataDataType_t dtype,
            strataRedOp_t op);

// The same, with out written by streaming stores (streaming_copy.h), for an
// output larger than the cache that nothing reads again soon: its lines are
// not read from memory before they are overwritten. As with reduce, out may
// be a or b, but must not overlap them otherwise. Reduced a few KiB at a time into a buffer the L1 cache keeps, which
// is then streamed out (streaming_reduce.cc); fenced before it returns.
// `divisor` > 0: each piece is divided by it (divide()) before it goes out,
// the finishing step of Avg, so the output is written once.
void reduceStreaming(void* out, const void* a, const void* b, size_t count, strataDataType_t dtype,
                     strataRedOp_t op, uint64_t divisor = 0);

// out[i] = in[i] / divisor: the finishing step of Avg. Integers truncate toward zero.
void divide(void* out, const void* in, size_t count, strataDataType_t dtype, uint64_t divisor);

// Name of the instruction set the dispatcher picked ("avx512", "avx2", "generic").
const char* isaName();

// Conversions used by kernels and tests (round to nearest even).
float halfToFloat(uint16_t h);
uint16_t floatToHalf(float f);
float bf16ToFloat(uint16_t b);
uint16_t floatToBf16(float f);

}  // namespace strata::kernels
