// Runtime dispatch to the best kernel variant for this CPU.
#include "kernels/cpu/reduce.h"
#include "kernels/cpu/half.h"

#include <cstring>

#include "kernels/cpu/kernel_table.h"

namespace strata::kernels {

namespace {

struct Dispatch {
  KernelTable table;
  const char* name = "generic";
  Dispatch() {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl")) {
      avx512::fillTable(table);
      name = "avx512";
    } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
      avx2::fillTable(table);
      name = "avx2";
    } else {
      generic::fillTable(table);
    }
  }
};

const Dispatch& dispatch() {
  static const Dispatch d;
  return d;
}

}  // namespace

void reduce(void* out, const void* a, const void* b, size_t count, strataDataType_t dtype,
            strataRedOp_t op) {
  dispatch().table.reduce[dtype][op](out, a, b, count);
}

void divide(void* out, const void* in, size_t count, strataDataType_t dtype, uint64_t divisor) {
  dispatch().table.divide[dtype](out, in, count, divisor);
}

const char* isaName() { return dispatch().name; }

float halfToFloat(uint16_t h) { return halfBitsToFloat(h); }
uint16_t floatToHalf(float f) { return floatToHalfBits(f); }
float bf16ToFloat(uint16_t b) {
  uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t floatToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

}  // namespace strata::kernels
