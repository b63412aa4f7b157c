#include "perf_check.h"

#include <cstdint>
#include <cstring>

namespace {

// Rank r's value at element i (i indexes its whole send buffer).
double inputValue(strataRedOp_t op, int r, int n, size_t i) {
  if (op == strataProd) return (i % size_t(n)) == size_t(r) ? 2 : 1;
  return double((i * 7 + size_t(r) * 3) % 5 + 1);
}

uint16_t toHalf(float f) {
  _Float16 h = _Float16(f);
  uint16_t v;
  std::memcpy(&v, &h, 2);
  return v;
}
uint16_t toBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

void store(strataDataType_t t, void* base, size_t i, double v) {
  switch (t) {
    case strataInt8: static_cast<int8_t*>(base)[i] = int8_t(v); break;
    case strataUint8: static_cast<uint8_t*>(base)[i] = uint8_t(v); break;
    case strataInt32: static_cast<int32_t*>(base)[i] = int32_t(v); break;
    case strataUint32: static_cast<uint32_t*>(base)[i] = uint32_t(v); break;
    case strataInt64: static_cast<int64_t*>(base)[i] = int64_t(v); break;
    case strataUint64: static_cast<uint64_t*>(base)[i] = uint64_t(v); break;
    case strataFloat16: static_cast<uint16_t*>(base)[i] = toHalf(float(v)); break;
    case strataBfloat16: static_cast<uint16_t*>(base)[i] = toBf16(float(v)); break;
    case strataFloat32: static_cast<float*>(base)[i] = float(v); break;
    case strataFloat64: static_cast<double*>(base)[i] = v; break;
    default: break;
  }
}

bool sameBits(strataDataType_t t, const void* base, size_t i, const void* expect) {
  size_t e = t == strataInt8 || t == strataUint8 ? 1
             : (t == strataFloat16 || t == strataBfloat16) ? 2
             : (t == strataInt32 || t == strataUint32 || t == strataFloat32) ? 4 : 8;
  return std::memcmp(static_cast<const uint8_t*>(base) + i * e, expect, e) == 0;
}

// The reduction over ranks of element i, as the library computes it.
void expectedReduced(const CheckSpec& s, size_t i, void* out) {
  double acc = inputValue(s.op, 0, s.nranks, i);
  for (int r = 1; r < s.nranks; ++r) {
    double v = inputValue(s.op, r, s.nranks, i);
    switch (s.op) {
      case strataProd: acc *= v; break;
      case strataMax: acc = v > acc ? v : acc; break;
      case strataMin: acc = v < acc ? v : acc; break;
      default: acc += v; break;
    }
  }
  if (s.op == strataAvg) {
    bool isFloat = s.dtype == strataFloat16 || s.dtype == strataBfloat16 || s.dtype == strataFloat32;
    if (s.dtype == strataFloat64) acc = acc / s.nranks;
    else if (isFloat) acc = double(float(acc) / float(s.nranks));
    else acc = double(int64_t(acc) / s.nranks);
  }
  store(s.dtype, out, 0, acc);
}

}  // namespace

void fillInput(const CheckSpec& s, void* send, size_t sendElems) {
  for (size_t i = 0; i < sendElems; ++i) store(s.dtype, send, i, inputValue(s.op, s.rank, s.nranks, i));
}

size_t countWrong(const CheckSpec& s, const void* recv) {
  size_t wrong = 0;
  uint8_t expect[8];
  const std::string_view c = s.collective;
  const size_t n = size_t(s.nranks);
  if (c == "all_reduce" || (c == "reduce" && s.rank == s.root)) {
    for (size_t i = 0; i < s.count; ++i) {
      expectedReduced(s, i, expect);
      wrong += !sameBits(s.dtype, recv, i, expect);
    }
  } else if (c == "reduce_scatter") {
    for (size_t i = 0; i < s.count; ++i) {
      expectedReduced(s, size_t(s.rank) * s.count + i, expect);
      wrong += !sameBits(s.dtype, recv, i, expect);
    }
  } else if (c == "all_gather") {
    for (size_t r = 0; r < n; ++r)
      for (size_t i = 0; i < s.count; ++i) {
        store(s.dtype, expect, 0, inputValue(s.op, int(r), s.nranks, i));
        wrong += !sameBits(s.dtype, recv, r * s.count + i, expect);
      }
  } else if (c == "broadcast") {
    for (size_t i = 0; i < s.count; ++i) {
      store(s.dtype, expect, 0, inputValue(s.op, s.root, s.nranks, i));
      wrong += !sameBits(s.dtype, recv, i, expect);
    }
  } else if (c == "alltoall") {
    for (size_t r = 0; r < n; ++r)
      for (size_t i = 0; i < s.count; ++i) {
        store(s.dtype, expect, 0, inputValue(s.op, int(r), s.nranks, size_t(s.rank) * s.count + i));
        wrong += !sameBits(s.dtype, recv, r * s.count + i, expect);
      }
  } else if (c == "sendrecv") {  // from rank-1
    int from = (s.rank - 1 + s.nranks) % s.nranks;
    for (size_t i = 0; i < s.count; ++i) {
      store(s.dtype, expect, 0, inputValue(s.op, from, s.nranks, i));
      wrong += !sameBits(s.dtype, recv, i, expect);
    }
  }
  return wrong;
}
