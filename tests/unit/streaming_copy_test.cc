// The streaming copy (kernels/cpu/streaming_copy.h) and the copy to two
// places (dual_copy.h) are exact at every length and every alignment of
// their source and destinations, and write nothing outside the destinations.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/dual_copy.h"
#include "kernels/cpu/streaming_copy.h"

namespace strata {
namespace {

TEST(StreamingCopy, IsExactAtEveryLengthAndAlignment) {
  std::mt19937 rng(5);
  std::vector<uint8_t> source(1 << 20);
  for (uint8_t& x : source) x = uint8_t(rng());
  for (size_t n : {size_t(0), size_t(1), size_t(15), size_t(47), size_t(63), size_t(64), size_t(65), size_t(127),
                   size_t(4099), size_t(65537), size_t(1000003)}) {
    for (size_t srcSkew : {size_t(0), size_t(1), size_t(8), size_t(13)}) {
      for (size_t dstSkew : {size_t(0), size_t(1), size_t(16), size_t(33), size_t(63)}) {
        if (n + srcSkew > source.size()) continue;
        // Guard bytes before and after a destination dstSkew bytes past a line.
        std::vector<uint8_t> storage(n + 256, 0xA5);
        uint8_t* line = storage.data() + (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64) % 64;
        uint8_t* dst = line + dstSkew;
        kernels::streamingCopy(dst, source.data() + srcSkew, n);
        ASSERT_TRUE(std::equal(dst, dst + n, source.begin() + long(srcSkew)))
            << n << " bytes, source +" << srcSkew << ", destination +" << dstSkew;
        for (uint8_t* g = storage.data(); g < dst; ++g) ASSERT_EQ(*g, 0xA5) << "wrote before the start";
        for (uint8_t* g = dst + n; g < storage.data() + storage.size(); ++g)
          ASSERT_EQ(*g, 0xA5) << n << " bytes, destination +" << dstSkew << ": wrote past the end";
      }
    }
  }
}

// Every way of storing each destination (ordinary or streaming stores), the
// two destinations lying alike or not within their lines, with the moves
// this CPU gets and with 16-byte ones.
TEST(CopyToTwo, IsExactAtEveryLengthAlignmentAndWayOfStoring) {
  std::mt19937 rng(7);
  std::vector<uint8_t> source(1 << 20);
  for (uint8_t& x : source) x = uint8_t(rng());
  for (size_t n : {size_t(0), size_t(1), size_t(15), size_t(63), size_t(64), size_t(65), size_t(127), size_t(4099),
                   size_t(65537), size_t(1000003)})
    for (size_t srcSkew : {size_t(0), size_t(3), size_t(16)})
      for (size_t skewA : {size_t(0), size_t(1), size_t(16), size_t(63)})
        for (size_t skewB : {size_t(0), size_t(16), size_t(33)})
          for (int ways = 0; ways < 8; ++ways) {
            if (n + srcSkew > source.size()) continue;
            const bool streamA = ways & 1, streamB = ways & 2, sixteen = ways & 4;
            std::vector<uint8_t> storageA(n + 256, 0xA5), storageB(n + 256, 0x5A);
            auto lineOf = [](std::vector<uint8_t>& v) {
              return v.data() + (64 - reinterpret_cast<uintptr_t>(v.data()) % 64) % 64;
            };
            uint8_t* a = lineOf(storageA) + skewA;
            uint8_t* b = lineOf(storageB) + skewB;
            if (sixteen) kernels::copyToTwoSixteenByteMoves(a, streamA, b, streamB, source.data() + srcSkew, n);
            else kernels::copyToTwo(a, streamA, b, streamB, source.data() + srcSkew, n);
            const std::string what = std::to_string(n) + " bytes, source +" + std::to_string(srcSkew) + ", first +" +
                                     std::to_string(skewA) + (streamA ? " streamed" : "") + ", second +" +
                                     std::to_string(skewB) + (streamB ? " streamed" : "") +
                                     (sixteen ? ", 16-byte moves" : "");
            ASSERT_TRUE(std::equal(a, a + n, source.begin() + long(srcSkew))) << what << ": the first differs";
            ASSERT_TRUE(std::equal(b, b + n, source.begin() + long(srcSkew))) << what << ": the second differs";
            for (uint8_t* g = storageA.data(); g < storageA.data() + storageA.size(); ++g)
              if (g < a || g >= a + n) ASSERT_EQ(*g, 0xA5) << what << ": wrote outside the first";
            for (uint8_t* g = storageB.data(); g < storageB.data() + storageB.size(); ++g)
              if (g < b || g >= b + n) ASSERT_EQ(*g, 0x5A) << what << ": wrote outside the second";
          }
}

}  // namespace
}  // namespace strata
