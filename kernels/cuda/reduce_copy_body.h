// The body of the reduce-and-copy kernel (cuda_kernels.h says what it
// computes), as a function of one worker's index among `workers`: on the GPU
// worker = the thread's global index and workers = the grid's threads; the
// CPU test calls it for every index in turn.
//
// Work split, so that most bytes move in 16-byte loads and stores: when every
// buffer sits at the same offset from a 16-byte boundary, the few elements
// before the first boundary (head) and after the last whole pack (tail) go one
// element per worker, and the packs between go kUnroll per worker per round,
// strided by `workers` so that neighbouring threads touch neighbouring packs
// (coalesced) and each thread has kUnroll loads per source in flight. Buffers
// at different offsets go element by element (correct, slower).
#pragma once

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/element_ops.h"

namespace strata::cuda::body {

struct alignas(16) Pack {
  uint64_t word[2];
};
constexpr int kUnroll = 4;

template <class T>
STRATA_HD T loadElement(const void* base, uint64_t i) {
#if defined(__CUDA_ARCH__)
  return static_cast<const T*>(base)[i];  // the launcher checked element alignment
#else
  T v;
  std::memcpy(&v, static_cast<const char*>(base) + i * sizeof(T), sizeof(T));
  return v;
#endif
}
template <class T>
STRATA_HD void storeElement(void* base, uint64_t i, T v) {
#if defined(__CUDA_ARCH__)
  static_cast<T*>(base)[i] = v;
#else
  std::memcpy(static_cast<char*>(base) + i * sizeof(T), &v, sizeof(T));
#endif
}
// Pack p of the packed region, which starts `headBytes` into the buffer.
STRATA_HD Pack loadPack(const void* base, uint64_t headBytes, uint64_t p) {
  const char* at = static_cast<const char*>(base) + headBytes + p * sizeof(Pack);
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const Pack*>(at);  // one 16-byte load
#else
  Pack v;
  std::memcpy(&v, at, sizeof(Pack));
  return v;
#endif
}
STRATA_HD void storePack(void* base, uint64_t headBytes, uint64_t p, const Pack& v) {
  char* at = static_cast<char*>(base) + headBytes + p * sizeof(Pack);
#if defined(__CUDA_ARCH__)
  *reinterpret_cast<Pack*>(at) = v;
#else
  std::memcpy(at, &v, sizeof(Pack));
#endif
}

// Where the packed region starts and ends, in elements.
struct Split {
  uint64_t head;       // elements before it
  uint64_t packs;      // 16-byte packs in it
  uint64_t tailStart;  // first element after it
};

template <class T>
STRATA_HD Split splitOf(const ReduceCopyArgs& a) {
  constexpr uint64_t kPerPack = sizeof(Pack) / sizeof(T);
  const uintptr_t offset = reinterpret_cast<uintptr_t>(a.dst[0]) % sizeof(Pack);
  bool sameOffset = offset % sizeof(T) == 0;
  // Constant trip counts (kernel parameters indexed by a variable would be
  // copied to local memory first).
#pragma unroll
  for (int s = 0; s < kMaxSources; ++s)
    if (s < a.nsrc) sameOffset &= reinterpret_cast<uintptr_t>(a.src[s]) % sizeof(Pack) == offset;
#pragma unroll
  for (int d = 1; d < kMaxDestinations; ++d)
    if (d < a.ndst) sameOffset &= reinterpret_cast<uintptr_t>(a.dst[d]) % sizeof(Pack) == offset;
  if (!sameOffset) return {a.count, 0, a.count};
  uint64_t head = ((sizeof(Pack) - offset) % sizeof(Pack)) / sizeof(T);
  if (head > a.count) head = a.count;
  const uint64_t packs = (a.count - head) / kPerPack;
  return {head, packs, head + packs * kPerPack};
}

template <class T, class Op>
STRATA_HD void reduceCopyElement(const ReduceCopyArgs& a, uint64_t i) {
  using A = typename ops::AccumulatorOf<T, Op>::type;
  A acc = ops::widen<A>(loadElement<T>(a.src[0], i));
#pragma unroll
  for (int s = 1; s < kMaxSources; ++s)
    if (s < a.nsrc) acc = Op::apply(acc, ops::widen<A>(loadElement<T>(a.src[s], i)));
  const T out = ops::finish<T>(acc, a.divisor);
#pragma unroll
  for (int d = 0; d < kMaxDestinations; ++d)
    if (d < a.ndst) storeElement<T>(a.dst[d], i, out);
}

// Packs first, first + stride, ..., first + (U - 1) * stride.
template <class T, class Op, int U>
STRATA_HD void reduceCopyPacks(const ReduceCopyArgs& a, uint64_t headBytes, uint64_t first, uint64_t stride) {
  using A = typename ops::AccumulatorOf<T, Op>::type;
  constexpr int kPerPack = int(sizeof(Pack) / sizeof(T));
  A acc[U][kPerPack];
  T lanes[kPerPack];
  Pack in[U];
#pragma unroll
  for (int u = 0; u < U; ++u) in[u] = loadPack(a.src[0], headBytes, first + u * stride);
#pragma unroll
  for (int u = 0; u < U; ++u) {
    std::memcpy(lanes, &in[u], sizeof(Pack));
#pragma unroll
    for (int j = 0; j < kPerPack; ++j) acc[u][j] = ops::widen<A>(lanes[j]);
  }
#pragma unroll
  for (int s = 1; s < kMaxSources; ++s) {
    if (s >= a.nsrc) break;
#pragma unroll
    for (int u = 0; u < U; ++u) in[u] = loadPack(a.src[s], headBytes, first + u * stride);
#pragma unroll
    for (int u = 0; u < U; ++u) {
      std::memcpy(lanes, &in[u], sizeof(Pack));
#pragma unroll
      for (int j = 0; j < kPerPack; ++j) acc[u][j] = Op::apply(acc[u][j], ops::widen<A>(lanes[j]));
    }
  }
#pragma unroll
  for (int u = 0; u < U; ++u) {
#pragma unroll
    for (int j = 0; j < kPerPack; ++j) lanes[j] = ops::finish<T>(acc[u][j], a.divisor);
    Pack out;
    std::memcpy(&out, lanes, sizeof(Pack));
#pragma unroll
    for (int d = 0; d < kMaxDestinations; ++d)
      if (d < a.ndst) storePack(a.dst[d], headBytes, first + u * stride, out);
  }
}

template <class T, class Op>
STRATA_HD void reduceCopyWorker(const ReduceCopyArgs& a, uint64_t worker, uint64_t workers) {
  const Split split = splitOf<T>(a);
  for (uint64_t i = worker; i < split.head; i += workers) reduceCopyElement<T, Op>(a, i);
  const uint64_t headBytes = split.head * sizeof(T);
  const uint64_t round = workers * kUnroll;
  const uint64_t fullRounds = split.packs - split.packs % round;
  for (uint64_t p = worker; p < fullRounds; p += round)
    reduceCopyPacks<T, Op, kUnroll>(a, headBytes, p, workers);
  for (uint64_t p = fullRounds + worker; p < split.packs; p += workers)
    reduceCopyPacks<T, Op, 1>(a, headBytes, p, workers);
  for (uint64_t i = split.tailStart + worker; i < a.count; i += workers) reduceCopyElement<T, Op>(a, i);
}

}  // namespace strata::cuda::body
