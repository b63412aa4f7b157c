#include "support/reference.h"

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "kernels/cpu/half.h"
#include "kernels/cpu/reduce.h"

namespace strata::test {

size_t elemSize(strataDataType_t t) {
  static const size_t s[] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};
  return s[t];
}

bool isFloat(strataDataType_t t) {
  return t == strataFloat16 || t == strataBfloat16 || t == strataFloat32 || t == strataFloat64;
}

double load(strataDataType_t t, const void* base, size_t i) {
  const uint8_t* p = static_cast<const uint8_t*>(base) + i * elemSize(t);
  switch (t) {
    case strataInt8: { int8_t v; std::memcpy(&v, p, 1); return v; }
    case strataUint8: return *p;
    case strataInt32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case strataUint32: { uint32_t v; std::memcpy(&v, p, 4); return v; }
    case strataInt64: { int64_t v; std::memcpy(&v, p, 8); return double(v); }
    case strataUint64: { uint64_t v; std::memcpy(&v, p, 8); return double(v); }
    case strataFloat16: { uint16_t v; std::memcpy(&v, p, 2); return kernels::halfToFloat(v); }
    case strataBfloat16: { uint16_t v; std::memcpy(&v, p, 2); return kernels::bf16ToFloat(v); }
    case strataFloat32: { float v; std::memcpy(&v, p, 4); return v; }
    case strataFloat64: { double v; std::memcpy(&v, p, 8); return v; }
    default: return 0;
  }
}

void store(strataDataType_t t, void* base, size_t i, double v) {
  uint8_t* p = static_cast<uint8_t*>(base) + i * elemSize(t);
  switch (t) {
    case strataInt8: { int8_t x = int8_t(int64_t(v)); std::memcpy(p, &x, 1); break; }
    case strataUint8: { uint8_t x = uint8_t(int64_t(v)); std::memcpy(p, &x, 1); break; }
    case strataInt32: { int32_t x = int32_t(int64_t(v)); std::memcpy(p, &x, 4); break; }
    case strataUint32: { uint32_t x = uint32_t(int64_t(v)); std::memcpy(p, &x, 4); break; }
    case strataInt64: { int64_t x = int64_t(v); std::memcpy(p, &x, 8); break; }
    case strataUint64: { uint64_t x = uint64_t(v); std::memcpy(p, &x, 8); break; }
    case strataFloat16: { uint16_t x = kernels::floatToHalf(float(v)); std::memcpy(p, &x, 2); break; }
    case strataBfloat16: { uint16_t x = kernels::floatToBf16(float(v)); std::memcpy(p, &x, 2); break; }
    case strataFloat32: { float x = float(v); std::memcpy(p, &x, 4); break; }
    case strataFloat64: std::memcpy(p, &v, 8); break;
    default: break;
  }
}

namespace {

// Element i's 64 random bits: splitmix64's mix of the seed's stream at i.
// Counter-based, so a fill costs a few multiplies an element: mt19937_64 with
// <random>'s distributions and store()'s per-element dtype switch were 80% of
// the multi-process collective matrices' time (every rank makes every rank's
// inputs for its reference).
uint64_t randomBits(uint64_t stream, uint64_t i) {
  uint64_t x = stream + (i + 1) * 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A binary16 next to f (|f| below 65504): f cut to the half's 10 mantissa bits
// for the normal halves. Any half near f will do, since the reference reads
// back what was stored; and cutting needs no branch on the random low bits
// (the compiler's conversion is a libgcc call here, and the rounding branch of
// floatToHalfBitsSoft mispredicts on every other random input).
uint16_t randomHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t a = x & 0x7fffffffu;
  if (a < 0x38800000u) return kernels::floatToHalfBitsSoft(f);  // below 2^-14: subnormal or zero, rare
  return uint16_t(((x >> 16) & 0x8000u) | ((a - 0x38000000u) >> 13));
}

// Writes to(v_i) as T at element i, for v_i = value(bits of i).
template <class T, class Value, class To>
void fillTyped(void* base, size_t count, uint64_t stream, Value value, To to) {
  uint8_t* p = static_cast<uint8_t*>(base);
  for (size_t i = 0; i < count; ++i) {
    const T x = to(value(randomBits(stream, i)));
    std::memcpy(p + i * sizeof(T), &x, sizeof(T));  // the caller's buffer may be misaligned
  }
}

}  // namespace

void fillRandom(strataDataType_t t, strataRedOp_t op, void* base, size_t count, uint64_t seed) {
  const uint64_t stream = randomBits(seed * 0x9e3779b97f4a7c15ull + 12345, 0);
  const bool prod = op == strataProd;
  // Floats: uniform in [-4, 4) ([0.5, 1.5) for products), 0 made 0.25.
  const double lo = prod ? 0.5 : -4.0, width = prod ? 1.0 : 8.0;
  auto real = [lo, width](uint64_t bits) {
    const double v = lo + width * double(bits >> 11) * 0x1p-53;
    return v == 0 ? 0.25 : v;
  };
  // Integers: uniform in [-60, 60] ([-3, 3] for products; from 0 when unsigned), 0 made 1.
  const bool unsignedType = t == strataUint8 || t == strataUint32 || t == strataUint64;
  const int64_t ilo = unsignedType ? 0 : (prod ? -3 : -60), span = (prod ? 3 : 60) - ilo + 1;
  auto integer = [ilo, span](uint64_t bits) {
    const int64_t v = ilo + int64_t((unsigned __int128)bits * uint64_t(span) >> 64);
    return v == 0 ? int64_t(1) : v;
  };
  switch (t) {
    case strataInt8: return fillTyped<int8_t>(base, count, stream, integer, [](int64_t v) { return int8_t(v); });
    case strataUint8: return fillTyped<uint8_t>(base, count, stream, integer, [](int64_t v) { return uint8_t(v); });
    case strataInt32: return fillTyped<int32_t>(base, count, stream, integer, [](int64_t v) { return int32_t(v); });
    case strataUint32:
      return fillTyped<uint32_t>(base, count, stream, integer, [](int64_t v) { return uint32_t(v); });
    case strataInt64: return fillTyped<int64_t>(base, count, stream, integer, [](int64_t v) { return v; });
    case strataUint64:
      return fillTyped<uint64_t>(base, count, stream, integer, [](int64_t v) { return uint64_t(v); });
    case strataFloat16:
      return fillTyped<uint16_t>(base, count, stream, real, [](double v) { return randomHalf(float(v)); });
    case strataBfloat16:
      return fillTyped<uint16_t>(base, count, stream, real, [](double v) { return kernels::floatToBf16(float(v)); });
    case strataFloat32: return fillTyped<float>(base, count, stream, real, [](double v) { return float(v); });
    case strataFloat64: return fillTyped<double>(base, count, stream, real, [](double v) { return v; });
    default: return;
  }
}

namespace {

// Integer reduction with the type's wrap-around, as the kernels do.
double intReduce(strataDataType_t t, strataRedOp_t op, const std::vector<const void*>& in, size_t i) {
  uint64_t bits = 0;
  int width = int(elemSize(t) * 8);
  bool isSigned = t == strataInt8 || t == strataInt32 || t == strataInt64;
  auto wrap = [&](uint64_t x) -> double {
    uint64_t mask = width == 64 ? ~0ull : ((1ull << width) - 1);
    x &= mask;
    if (isSigned && width < 64 && (x >> (width - 1)) & 1) return double(int64_t(x | ~mask));
    if (isSigned) return double(int64_t(x));
    return double(x);
  };
  double best = load(t, in[0], i);
  bits = uint64_t(int64_t(best));
  for (size_t r = 1; r < in.size(); ++r) {
    double v = load(t, in[r], i);
    uint64_t vb = uint64_t(int64_t(v));
    switch (op) {
      case strataProd: bits *= vb; break;
      case strataMax: best = v > best ? v : best; break;
      case strataMin: best = v < best ? v : best; break;
      default: bits += vb; break;
    }
  }
  if (op == strataMax || op == strataMin) return best;
  double sum = wrap(bits);
  if (op == strataAvg) return double(int64_t(sum) / int64_t(in.size()));
  return sum;
}

}  // namespace

double reduceReference(strataDataType_t t, strataRedOp_t op, const std::vector<const void*>& in,
                       size_t i) {
  if (!isFloat(t)) return intReduce(t, op, in, i);
  double acc = load(t, in[0], i);
  for (size_t r = 1; r < in.size(); ++r) {
    double v = load(t, in[r], i);
    switch (op) {
      case strataProd: acc *= v; break;
      case strataMax: acc = std::fmax(acc, v); break;
      case strataMin: acc = std::fmin(acc, v); break;
      default: acc += v; break;
    }
  }
  if (op == strataAvg) acc /= double(in.size());
  return acc;
}

bool close(strataDataType_t t, strataRedOp_t op, double got, double want, int n, double magnitude) {
  if (!isFloat(t) || op == strataMax || op == strataMin) return got == want;
  double eps = t == strataFloat16 ? 1.0 / 1024 : t == strataBfloat16 ? 1.0 / 128
             : t == strataFloat32 ? 1.2e-7 : 2.3e-16;
  double tol = eps * (n + 1) * (magnitude + std::fabs(want)) + 1e-300;
  return std::fabs(got - want) <= tol;
}

size_t checkReduced(strataDataType_t t, strataRedOp_t op, const void* out,
                    const std::vector<const void*>& inputs, size_t inOffset, size_t count,
                    std::string* first) {
  size_t bad = 0;
  for (size_t i = 0; i < count; ++i) {
    double want = reduceReference(t, op, inputs, inOffset + i);
    double magnitude = 0;
    for (const void* in : inputs) magnitude += std::fabs(load(t, in, inOffset + i));
    if (op == strataAvg) magnitude /= double(inputs.size());
    double got = load(t, out, i);
    if (!close(t, op, got, want, int(inputs.size()), magnitude)) {
      if (bad == 0 && first)
        *first = format("element %zu: got %.10g, want %.10g", i, got, want);
      ++bad;
    }
  }
  return bad;
}

}  // namespace strata::test
