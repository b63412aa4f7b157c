#include "transports/shm/store_mode.h"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace strata {

void streamingCopy(void* dst, const void* src, size_t n) {
#if defined(__x86_64__)
  auto* out = static_cast<__m128i*>(dst);
  auto* in = static_cast<const __m128i*>(src);
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
  _mm_sfence();  // streaming stores are not ordered by the release store that follows
#else
  std::memcpy(dst, src, n);
#endif
}

bool StoreModeChooser::record(bool streamed, size_t bytes, uint64_t nanos) {
  if (bytes == 0) return false;
  const double perKiB = double(nanos) * 1024.0 / double(bytes);
  double& cost = cost_[streamed ? 1 : 0];
  const double weight = streamed == prefersStreaming_ ? kNewestWeight : kExploredWeight;
  cost = cost == 0 ? perKiB : cost + weight * (std::min(perKiB, kMostOfAverage * cost) - cost);
  if (cost_[0] == 0 || cost_[1] == 0) return false;
  const bool before = prefersStreaming_;
  const double streaming = cost_[1] * kStreamingBias;
  if (!prefersStreaming_ && streaming * kSwitchMargin < cost_[0]) prefersStreaming_ = true;
  else if (prefersStreaming_ && cost_[0] * kSwitchMargin < streaming) prefersStreaming_ = false;
  return prefersStreaming_ != before;
}

}  // namespace strata
