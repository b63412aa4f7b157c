#include "kernels/cpu/multi_copy.h"

#include <cstdint>
#include <cstring>

namespace strata::kernels {

namespace {

// Below this a call into memcpy costs more than the inline loop.
constexpr size_t kInlineMax = 512;

inline void copySmall(uint8_t* d, const uint8_t* s, size_t n) {
  size_t i = 0;
  for (; i + 32 <= n; i += 32) __builtin_memcpy(d + i, s + i, 32);
  if (i + 16 <= n) {
    __builtin_memcpy(d + i, s + i, 16);
    i += 16;
  }
  for (; i < n; ++i) d[i] = s[i];
}

}  // namespace

void multiCopy(const CopyItem* items, size_t count) {
  for (size_t k = 0; k < count; ++k) {
    const CopyItem& it = items[k];
    auto* d = static_cast<uint8_t*>(it.dst);
    const auto* s = static_cast<const uint8_t*>(it.src);
    if (d == s || it.bytes == 0) continue;
    if (it.bytes <= kInlineMax) {
      copySmall(d, s, it.bytes);
    } else {
      std::memcpy(d, s, it.bytes);
    }
  }
}

}  // namespace strata::kernels
