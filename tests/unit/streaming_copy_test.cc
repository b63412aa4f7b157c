// The streaming copy (kernels/cpu/streaming_copy.h) is exact at every length
// and every alignment of its source and its destination, and writes nothing
// outside the destination.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

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

}  // namespace
}  // namespace strata
