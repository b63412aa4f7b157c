#include "kernels/cpu/dual_copy.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/streaming_copy.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace strata::kernels {

namespace {

#if defined(__x86_64__)
// `lines` whole 64-byte lines of src to a and b, each line loaded once; a
// streamed destination is 64-byte aligned here (copyToTwo's head).
template <bool kStreamA, bool kStreamB>
void linesSse2(uint8_t* a, uint8_t* b, const uint8_t* src, size_t lines) {
  auto* in = reinterpret_cast<const __m128i*>(src);
  auto* x = reinterpret_cast<__m128i*>(a);
  auto* y = reinterpret_cast<__m128i*>(b);
  for (size_t i = 0; i < lines; ++i, in += 4, x += 4, y += 4) {
    __m128i v[4] = {_mm_loadu_si128(in), _mm_loadu_si128(in + 1), _mm_loadu_si128(in + 2), _mm_loadu_si128(in + 3)};
    for (int k = 0; k < 4; ++k) {
      if constexpr (kStreamA) _mm_stream_si128(x + k, v[k]);
      else _mm_storeu_si128(x + k, v[k]);
      if constexpr (kStreamB) _mm_stream_si128(y + k, v[k]);
      else _mm_storeu_si128(y + k, v[k]);
    }
  }
}

template <bool kStreamA, bool kStreamB>
__attribute__((target("avx512f"))) void linesAvx512(uint8_t* a, uint8_t* b, const uint8_t* src, size_t lines) {
  for (size_t i = 0; i < lines; ++i, src += 64, a += 64, b += 64) {
    const __m512i v = _mm512_loadu_si512(src);
    if constexpr (kStreamA) _mm512_stream_si512(reinterpret_cast<__m512i*>(a), v);
    else _mm512_storeu_si512(a, v);
    if constexpr (kStreamB) _mm512_stream_si512(reinterpret_cast<__m512i*>(b), v);
    else _mm512_storeu_si512(b, v);
  }
}

template <bool kStreamA, bool kStreamB>
void lines(uint8_t* a, uint8_t* b, const uint8_t* src, size_t n, bool avx512) {
  if (avx512) linesAvx512<kStreamA, kStreamB>(a, b, src, n);
  else linesSse2<kStreamA, kStreamB>(a, b, src, n);
}
#endif

void copyToTwoWith(bool avx512, void* first, bool streamFirst, void* second, bool streamSecond, const void* src,
                   size_t n) {
  if (n == 0) return;
  auto* a = static_cast<uint8_t*>(first);
  auto* b = static_cast<uint8_t*>(second);
  auto* s = static_cast<const uint8_t*>(src);
#if defined(__x86_64__)
  // Streamed lines are written whole from a line's start; two streamed
  // destinations that do not lie alike within their lines take two passes.
  if (streamFirst && streamSecond && ((reinterpret_cast<uintptr_t>(a) - reinterpret_cast<uintptr_t>(b)) & 63)) {
    streamingCopyUnfenced(a, s, n);
    streamingCopyUnfenced(b, s, n);
    streamingFence();
    return;
  }
  const uint8_t* aligned = streamFirst ? a : streamSecond ? b : nullptr;
  const size_t head = aligned ? std::min(n, size_t(-reinterpret_cast<uintptr_t>(aligned) & 63)) : 0;
  std::memcpy(a, s, head);
  std::memcpy(b, s, head);
  a += head;
  b += head;
  s += head;
  n -= head;
  const size_t whole = n / 64;
  if (streamFirst && streamSecond) lines<true, true>(a, b, s, whole, avx512);
  else if (streamFirst) lines<true, false>(a, b, s, whole, avx512);
  else if (streamSecond) lines<false, true>(a, b, s, whole, avx512);
  else lines<false, false>(a, b, s, whole, avx512);
  const size_t done = whole * 64;
  std::memcpy(a + done, s + done, n - done);
  std::memcpy(b + done, s + done, n - done);
  if (streamFirst || streamSecond) streamingFence();
#else
  (void)avx512;
  (void)streamFirst;
  (void)streamSecond;
  std::memcpy(a, s, n);
  std::memcpy(b, s, n);
#endif
}

bool hasAvx512() {
#if defined(__x86_64__)
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
#else
  return false;
#endif
}

}  // namespace

void copyToTwo(void* first, bool streamFirst, void* second, bool streamSecond, const void* src, size_t n) {
  copyToTwoWith(hasAvx512(), first, streamFirst, second, streamSecond, src, n);
}

void copyToTwoSixteenByteMoves(void* first, bool streamFirst, void* second, bool streamSecond, const void* src,
                               size_t n) {
  copyToTwoWith(false, first, streamFirst, second, streamSecond, src, n);
}

}  // namespace strata::kernels
