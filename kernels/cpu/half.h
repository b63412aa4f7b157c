// IEEE binary16 <-> float32 for the CPU kernels. With a compiler that has
// _Float16 on this target (GCC 12 on x86-64) the compiler's conversion is
// used; otherwise (clang 14, used for the fuzz builds) the exact software
// version below: round to nearest even, subnormals, infinities, NaN payloads
// (tests/unit/kernels_test.cc compares the two on every half and many floats).
#pragma once

#include <cstdint>
#include <cstring>

namespace strata::kernels {

inline float halfBitsToFloatSoft(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, x;
  if (e == 0) {
    float v = float(m) * 5.9604644775390625e-8f;  // m x 2^-24, exact
    std::memcpy(&x, &v, 4);
    x |= sign;
  } else if (e == 31) {
    x = sign | 0x7f800000u | (m << 13);
  } else {
    x = sign | ((e + 112) << 23) | (m << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

inline uint16_t floatToHalfBitsSoft(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return uint16_t(sign | 0x7e00u | ((a >> 13) & 0x3ffu));  // NaN, quiet
  if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // 65520 and up round to infinity
  if (a < 0x38800000u) {                                  // below 2^-14: subnormal or zero
    if (a < 0x33000000u) return uint16_t(sign);           // below 2^-25: zero
    uint32_t mant = (a & 0x7fffffu) | 0x800000u, shift = 126 - (a >> 23);
    uint32_t q = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) ++q;
    return uint16_t(sign | q);
  }
  uint32_t h = (a - 0x38000000u) >> 13, rem = a & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) ++h;
  return uint16_t(sign | h);
}

inline float halfBitsToFloat(uint16_t h) {
#ifdef __FLT16_MANT_DIG__
  _Float16 v;
  std::memcpy(&v, &h, 2);
  return float(v);
#else
  return halfBitsToFloatSoft(h);
#endif
}

inline uint16_t floatToHalfBits(float f) {
#ifdef __FLT16_MANT_DIG__
  _Float16 v = _Float16(f);
  uint16_t h;
  std::memcpy(&h, &v, 2);
  return h;
#else
  return floatToHalfBitsSoft(f);
#endif
}

}  // namespace strata::kernels
