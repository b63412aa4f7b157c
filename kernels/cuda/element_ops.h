// Per-element arithmetic of the CUDA kernels, written once for the GPU and
// the CPU: nvcc compiles it into the kernels, and the host compiler into
// tests/unit/cuda_body_test.cc, which runs the kernels' bodies on the CPU
// (every thread index in turn) so that their indexing and arithmetic are
// checked on machines without a GPU.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#define STRATA_HD __host__ __device__ __forceinline__
#else
#define STRATA_HD inline
#endif
#if !defined(__CUDA_ARCH__)
#include "kernels/cpu/half.h"
#endif

namespace strata::cuda::ops {

// Storage types of the 16-bit floats: their bits.
struct Half { uint16_t bits; };
struct Bf16 { uint16_t bits; };

struct Sum { template <class A> STRATA_HD static A apply(A a, A b) { return A(a + b); } };
struct Prod { template <class A> STRATA_HD static A apply(A a, A b) { return A(a * b); } };
struct Max {  // NaN in either input gives NaN (false for integers), as the CPU kernels
  template <class A> STRATA_HD static A apply(A a, A b) {
    if (a != a) return a;
    if (b != b) return b;
    return a > b ? a : b;
  }
};
struct Min {
  template <class A> STRATA_HD static A apply(A a, A b) {
    if (a != a) return a;
    if (b != b) return b;
    return a < b ? a : b;
  }
};

// The type values are combined in: float for the 16-bit floats; for signed
// integer sum and product the unsigned type, so that they wrap modulo 2^n
// (as NCCL's and the CPU kernels') instead of overflowing.
template <class T, class Op> struct AccumulatorOf { using type = T; };
template <class Op> struct AccumulatorOf<Half, Op> { using type = float; };
template <class Op> struct AccumulatorOf<Bf16, Op> { using type = float; };
template <> struct AccumulatorOf<int8_t, Sum> { using type = uint8_t; };
template <> struct AccumulatorOf<int8_t, Prod> { using type = uint8_t; };
template <> struct AccumulatorOf<int32_t, Sum> { using type = uint32_t; };
template <> struct AccumulatorOf<int32_t, Prod> { using type = uint32_t; };
template <> struct AccumulatorOf<int64_t, Sum> { using type = uint64_t; };
template <> struct AccumulatorOf<int64_t, Prod> { using type = uint64_t; };

STRATA_HD float halfToFloat(uint16_t h) {
#if defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(h));
#else
  return kernels::halfBitsToFloat(h);
#endif
}
STRATA_HD uint16_t floatToHalf(float f) {
#if defined(__CUDA_ARCH__)
  return __half_as_ushort(__float2half_rn(f));
#else
  return kernels::floatToHalfBits(f);
#endif
}
STRATA_HD float bf16ToFloat(uint16_t b) {
#if defined(__CUDA_ARCH__)
  return __bfloat162float(__ushort_as_bfloat16(b));
#else
  uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}
STRATA_HD uint16_t floatToBf16(float f) {  // round to nearest even; NaN stays NaN
#if defined(__CUDA_ARCH__)
  return __bfloat16_as_ushort(__float2bfloat16_rn(f));
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
#endif
}

// Storage value -> accumulator value.
template <class A, class T> STRATA_HD A widen(T v) { return A(v); }
template <> STRATA_HD float widen<float, Half>(Half v) { return halfToFloat(v.bits); }
template <> STRATA_HD float widen<float, Bf16>(Bf16 v) { return bf16ToFloat(v.bits); }

// Accumulator value -> storage value, divided by `divisor` when it is above 1
// (Avg; integers truncate toward zero, in the storage type as the CPU path).
template <class T, class A> STRATA_HD T finish(A acc, uint64_t divisor) {
  T v = T(acc);
  if (divisor > 1) v = T(v / T(divisor));
  return v;
}
template <> STRATA_HD Half finish<Half, float>(float acc, uint64_t divisor) {
  return Half{floatToHalf(divisor > 1 ? acc / float(divisor) : acc)};
}
template <> STRATA_HD Bf16 finish<Bf16, float>(float acc, uint64_t divisor) {
  return Bf16{floatToBf16(divisor > 1 ? acc / float(divisor) : acc)};
}

}  // namespace strata::cuda::ops
