#include "kernels/cuda/host_bodies.h"

#include <cstdarg>
#include <cstdio>

#include "core/dtype.h"

#include "kernels/cuda/multi_copy_body.h"
#include "kernels/cuda/reduce_copy_body.h"

namespace strata::cuda {

namespace {

template <class Op>
void runWorker(strataDataType_t dtype, const ReduceCopyArgs& a, uint64_t w, uint64_t workers) {
  switch (dtype) {
    case strataInt8: return body::reduceCopyWorker<int8_t, Op>(a, w, workers);
    case strataUint8: return body::reduceCopyWorker<uint8_t, Op>(a, w, workers);
    case strataInt32: return body::reduceCopyWorker<int32_t, Op>(a, w, workers);
    case strataUint32: return body::reduceCopyWorker<uint32_t, Op>(a, w, workers);
    case strataInt64: return body::reduceCopyWorker<int64_t, Op>(a, w, workers);
    case strataUint64: return body::reduceCopyWorker<uint64_t, Op>(a, w, workers);
    case strataFloat16: return body::reduceCopyWorker<ops::Half, Op>(a, w, workers);
    case strataBfloat16: return body::reduceCopyWorker<ops::Bf16, Op>(a, w, workers);
    case strataFloat32: return body::reduceCopyWorker<float, Op>(a, w, workers);
    case strataFloat64: return body::reduceCopyWorker<double, Op>(a, w, workers);
    default: return;
  }
}

std::string said(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string said(const char* format, ...) {
  char buf[256];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

}  // namespace

std::string checkReduceCopyArgs(const ReduceCopyArgs& args, strataDataType_t dtype, strataRedOp_t op) {
  const size_t size = dtypeSize(dtype);
  if (!size || !validRedOp(op)) return said("reduce-copy: invalid dtype %d or op %d", int(dtype), int(op));
  if (args.nsrc < 1 || args.nsrc > kMaxSources || args.ndst < 1 || args.ndst > kMaxDestinations)
    return said("reduce-copy: %d sources and %d destinations; 1-%d and 1-%d are supported", args.nsrc, args.ndst,
                kMaxSources, kMaxDestinations);
  if (args.count == 0) return "";
  for (int s = 0; s < args.nsrc; ++s)
    if (!args.src[s] || reinterpret_cast<uintptr_t>(args.src[s]) % size)
      return said("reduce-copy: source %d (%p) is null or not aligned to its %zu-byte elements", s, args.src[s],
                  size);
  for (int d = 0; d < args.ndst; ++d)
    if (!args.dst[d] || reinterpret_cast<uintptr_t>(args.dst[d]) % size)
      return said("reduce-copy: destination %d (%p) is null or not aligned to its %zu-byte elements", d, args.dst[d],
                  size);
  return "";
}

void reduceCopyOnHost(strataDataType_t dtype, strataRedOp_t op, const ReduceCopyArgs& a, uint64_t workers) {
  for (uint64_t w = 0; w < workers; ++w) {
    switch (op) {
      case strataSum: case strataAvg: runWorker<ops::Sum>(dtype, a, w, workers); break;
      case strataProd: runWorker<ops::Prod>(dtype, a, w, workers); break;
      case strataMax: runWorker<ops::Max>(dtype, a, w, workers); break;
      case strataMin: runWorker<ops::Min>(dtype, a, w, workers); break;
      default: return;
    }
  }
}

void multiCopyOnHost(const CopySegment* table, int n, uint64_t chunks, uint64_t blocks, uint64_t threads) {
  for (uint64_t b = 0; b < blocks; ++b)
    for (uint64_t t = 0; t < threads; ++t) body::multiCopyBlock(table, n, chunks, b, blocks, t, threads);
}

}  // namespace strata::cuda
