#include "kernels/cpu/streaming_copy.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace strata::kernels {

void streamingCopyUnfenced(void* dst, const void* src, size_t n) {
#if defined(__x86_64__)
  auto* to = static_cast<uint8_t*>(dst);
  auto* from = static_cast<const uint8_t*>(src);
  // Up to the destination's next line with ordinary stores: the streaming
  // stores then fill whole lines, which go to memory without being read.
  const size_t head = std::min(n, size_t(-reinterpret_cast<uintptr_t>(to) & 63));
  std::memcpy(to, from, head);
  to += head;
  from += head;
  n -= head;
  auto* out = reinterpret_cast<__m128i*>(to);
  auto* in = reinterpret_cast<const __m128i*>(from);
  const size_t lines = n / 64;
  for (size_t i = 0; i < lines; ++i, out += 4, in += 4) {
    const __m128i a = _mm_loadu_si128(in), b = _mm_loadu_si128(in + 1);
    const __m128i c = _mm_loadu_si128(in + 2), d = _mm_loadu_si128(in + 3);
    _mm_stream_si128(out, a);
    _mm_stream_si128(out + 1, b);
    _mm_stream_si128(out + 2, c);
    _mm_stream_si128(out + 3, d);
  }
  std::memcpy(out, in, n % 64);
#else
  std::memcpy(dst, src, n);
#endif
}

void streamingFence() {
#if defined(__x86_64__)
  _mm_sfence();  // streaming stores are not ordered by the release stores that follow
#endif
}

void streamingCopy(void* dst, const void* src, size_t n) {
  streamingCopyUnfenced(dst, src, n);
  streamingFence();
}

}  // namespace strata::kernels
