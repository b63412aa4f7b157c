// Every CPU kernel (dtype x op) against the float64 / exact-integer reference,
// on random inputs, odd counts, unaligned pointers and in place; the
// streaming-store form (reduceStreaming, Avg's division folded in) against
// the plain one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/dtype.h"
#include "kernels/cpu/half.h"
#include "kernels/cpu/reduce.h"
#include "support/reference.h"

namespace strata {
namespace {

using test::elemSize;

struct KernelCase {
  strataDataType_t dtype;
  strataRedOp_t op;
};

class KernelTest : public ::testing::TestWithParam<KernelCase> {};

TEST_P(KernelTest, MatchesReferenceOnOddCountsAndUnalignedBuffers) {
  const auto [dtype, op] = GetParam();
  const strataRedOp_t kernelOp = op == strataAvg ? strataSum : op;
  const size_t e = elemSize(dtype);
  for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(1023), size_t(4099), size_t(65537)}) {
    for (size_t misalign : {size_t(0), size_t(1), size_t(3)}) {
      std::vector<uint8_t> a(count * e + 8), b(count * e + 8), out(count * e + 8, 0xAB);
      uint8_t* pa = a.data() + misalign;
      uint8_t* pb = b.data() + (misalign * 2) % 5;
      uint8_t* po = out.data() + (misalign + 1) % 4;
      test::fillRandom(dtype, op, pa, count, count * 31 + misalign);
      test::fillRandom(dtype, op, pb, count, count * 17 + misalign + 1);
      kernels::reduce(po, pa, pb, count, dtype, kernelOp);
      if (op == strataAvg) kernels::divide(po, po, count, dtype, 2);
      std::string first;
      size_t bad = test::checkReduced(dtype, op, po, {pa, pb}, 0, count, &first);
      EXPECT_EQ(bad, 0u) << dtypeName(dtype) << " " << redOpName(op) << " count " << count
                         << " misalign " << misalign << ": " << first;
      // With streaming stores (and Avg's division folded in): the same
      // bytes, nothing written outside out.
      {
        std::vector<uint8_t> streamed(count * e + 130, 0xAB);
        for (size_t skew : {size_t(0), (misalign * 21 + 1) % 64}) {
          uint8_t* line = streamed.data() + (64 - reinterpret_cast<uintptr_t>(streamed.data()) % 64) % 64;
          uint8_t* ps = line + skew;
          std::fill(streamed.begin(), streamed.end(), 0xAB);
          kernels::reduceStreaming(ps, pa, pb, count, dtype, kernelOp, op == strataAvg ? 2 : 0);
          EXPECT_TRUE(std::equal(ps, ps + count * e, po)) << "streamed, destination +" << skew << ", count " << count;
          EXPECT_TRUE(std::all_of(streamed.data(), ps, [](uint8_t v) { return v == 0xAB; })) << "wrote before out";
          EXPECT_TRUE(std::all_of(ps + count * e, streamed.data() + streamed.size(), [](uint8_t v) { return v == 0xAB; }))
              << "wrote past out";
        }
      }
      // In place: out aliases the first input.
      std::vector<uint8_t> copy(pa, pa + count * e);
      kernels::reduce(pa, pa, pb, count, dtype, kernelOp);
      if (op == strataAvg) kernels::divide(pa, pa, count, dtype, 2);
      bad = test::checkReduced(dtype, op, pa, {copy.data(), pb}, 0, count, &first);
      EXPECT_EQ(bad, 0u) << "in place: " << first;
      {
        std::vector<uint8_t> inPlace(pb, pb + count * e);
        kernels::reduceStreaming(inPlace.data(), copy.data(), inPlace.data(), count, dtype, kernelOp,
                                 op == strataAvg ? 2 : 0);
        EXPECT_TRUE(std::equal(inPlace.begin(), inPlace.end(), pa)) << "streamed in place, count " << count;
      }
    }
  }
}

std::vector<KernelCase> allCases() {
  std::vector<KernelCase> v;
  for (int t = 0; t < strataNumTypes; ++t)
    for (int op = 0; op < strataNumOps; ++op) v.push_back({strataDataType_t(t), strataRedOp_t(op)});
  return v;
}

INSTANTIATE_TEST_SUITE_P(AllTypesAndOps, KernelTest, ::testing::ValuesIn(allCases()),
                         [](const auto& info) {
                           return std::string(dtypeName(info.param.dtype)) + "_" +
                                  redOpName(info.param.op);
                         });

TEST(KernelDivide, IntegerAverageTruncatesTowardZero) {
  int32_t v[4] = {-7, 7, -1, 5};
  kernels::divide(v, v, 4, strataInt32, 2);
  EXPECT_EQ(v[0], -3);
  EXPECT_EQ(v[1], 3);
  EXPECT_EQ(v[2], 0);
  EXPECT_EQ(v[3], 2);
}

TEST(KernelReduce, Float16RoundsEachStepInFloat32) {
  // 2048 + 1 is not representable in float16: the sum rounds to even (2048).
  uint16_t a = kernels::floatToHalf(2048.0f), b = kernels::floatToHalf(1.0f), out = 0;
  kernels::reduce(&out, &a, &b, 1, strataFloat16, strataSum);
  EXPECT_EQ(kernels::halfToFloat(out), 2048.0f);
  uint16_t c = kernels::floatToHalf(3.0f);
  kernels::reduce(&out, &a, &c, 1, strataFloat16, strataSum);
  EXPECT_EQ(kernels::halfToFloat(out), 2052.0f);
}

TEST(KernelReduce, NaNPropagatesThroughMaxAndMin) {
  float a[2] = {std::nanf(""), 1.0f}, b[2] = {1.0f, std::nanf("")}, out[2];
  kernels::reduce(out, a, b, 2, strataFloat32, strataMax);
  EXPECT_TRUE(std::isnan(out[0]) && std::isnan(out[1]));
  kernels::reduce(out, a, b, 2, strataFloat32, strataMin);
  EXPECT_TRUE(std::isnan(out[0]) && std::isnan(out[1]));
}

TEST(KernelReduce, NaNPropagatesInHalfPrecisionVectorAndTailLanes) {
  for (strataDataType_t t : {strataFloat16, strataBfloat16}) {
    for (strataRedOp_t op : {strataMax, strataMin, strataSum}) {
      const size_t n = 19;  // two vector blocks and a scalar tail
      std::vector<uint16_t> a(n), b(n), out(n);
      for (size_t i = 0; i < n; ++i) {
        float nan = std::nanf("");
        float av = (i % 3 == 0) ? nan : float(i), bv = (i % 5 == 1) ? nan : float(n - i);
        a[i] = t == strataFloat16 ? kernels::floatToHalf(av) : kernels::floatToBf16(av);
        b[i] = t == strataFloat16 ? kernels::floatToHalf(bv) : kernels::floatToBf16(bv);
      }
      kernels::reduce(out.data(), a.data(), b.data(), n, t, op);
      for (size_t i = 0; i < n; ++i) {
        float got = t == strataFloat16 ? kernels::halfToFloat(out[i]) : kernels::bf16ToFloat(out[i]);
        bool expectNan = (i % 3 == 0) || (i % 5 == 1);
        EXPECT_EQ(std::isnan(got), expectNan) << dtypeName(t) << " " << redOpName(op) << " lane " << i;
      }
    }
  }
}

TEST(KernelDispatch, PicksAVectorVariantOnThisCpu) {
  std::string isa = kernels::isaName();
  EXPECT_TRUE(isa == "avx512" || isa == "avx2" || isa == "generic") << isa;
}

// The software binary16 conversion (used where the compiler has no _Float16,
// e.g. the clang fuzz build) against the compiler's, on every half and on
// about a million floats spread over all bit patterns, boundaries included.
TEST(HalfConversion, SoftwareMatchesTheCompilerBitForBit) {
#ifndef __FLT16_MANT_DIG__
  GTEST_SKIP() << "this compiler has no _Float16 to compare with";
#else
  for (uint32_t h = 0; h < 65536; ++h) {
    float want = kernels::halfBitsToFloat(uint16_t(h)), got = kernels::halfBitsToFloatSoft(uint16_t(h));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << h;
      continue;
    }
    uint32_t a, b;
    std::memcpy(&a, &want, 4);
    std::memcpy(&b, &got, 4);
    ASSERT_EQ(a, b) << "half bits " << h;
  }
  auto check = [](uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, 4);
    uint16_t want = kernels::floatToHalfBits(f), got = kernels::floatToHalfBitsSoft(f);
    bool wantNan = (want & 0x7c00) == 0x7c00 && (want & 0x3ff);
    if (wantNan) {
      ASSERT_TRUE((got & 0x7c00) == 0x7c00 && (got & 0x3ff)) << std::hex << bits;
      ASSERT_EQ(want & 0x8000, got & 0x8000) << std::hex << bits;
    } else {
      ASSERT_EQ(want, got) << "float bits 0x" << std::hex << bits;
    }
  };
  for (uint64_t bits = 0; bits < (uint64_t(1) << 32); bits += 4099) check(uint32_t(bits));
  // Around every rounding boundary: the 2^13 float steps between halves, subnormals, overflow.
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    float f = kernels::halfBitsToFloat(uint16_t(h));
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    for (int32_t d : {-4097, -4096, -4095, -1, 0, 1, 4095, 4096, 4097}) {
      check(bits + uint32_t(d));
      check((bits + uint32_t(d)) | 0x80000000u);
    }
  }
  for (uint32_t bits : {0x33000000u, 0x33000001u, 0x32ffffffu, 0x477fefffu, 0x477ff000u, 0x477ff001u, 0x7f800000u})
    check(bits);
#endif
}

}  // namespace
}  // namespace strata

