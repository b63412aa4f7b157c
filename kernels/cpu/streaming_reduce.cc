// reduceStreaming (reduce.h): the dispatched reduce kernel, piece by piece,
// into a buffer on the stack that stays in the L1 cache, each piece then
// copied out with streaming stores. The kernels themselves stay one plain
// loop per dtype x op; the extra pass costs L1 bandwidth, not memory's.
#include <algorithm>
#include <cstdint>

#include "core/dtype.h"
#include "kernels/cpu/reduce.h"
#include "kernels/cpu/streaming_copy.h"

namespace strata::kernels {

namespace {
constexpr size_t kPieceBytes = 4096;  // an eighth of a 32 KiB L1: room for both inputs' lines
}  // namespace

void reduceStreaming(void* out, const void* a, const void* b, size_t count, strataDataType_t dtype,
                     strataRedOp_t op, uint64_t divisor) {
  const size_t elem = dtypeSize(dtype);
  auto* to = static_cast<uint8_t*>(out);
  auto* x = static_cast<const uint8_t*>(a);
  auto* y = static_cast<const uint8_t*>(b);
  // The elements before out's next line go straight there, so that every
  // piece after them starts on a line and streams whole lines only.
  const size_t toLine = size_t(-reinterpret_cast<uintptr_t>(to) & 63);
  if (toLine % elem == 0) {
    const size_t head = std::min(count, toLine / elem);
    reduce(to, x, y, head, dtype, op);
    if (divisor) divide(to, to, head, dtype, divisor);
    to += head * elem;
    x += head * elem;
    y += head * elem;
    count -= head;
  }
  alignas(64) uint8_t piece[kPieceBytes];
  const size_t perPiece = kPieceBytes / elem;
  while (count > 0) {
    const size_t n = std::min(count, perPiece);
    reduce(piece, x, y, n, dtype, op);
    if (divisor) divide(piece, piece, n, dtype, divisor);
    streamingCopyUnfenced(to, piece, n * elem);
    to += n * elem;
    x += n * elem;
    y += n * elem;
    count -= n;
  }
  streamingFence();
}

}  // namespace strata::kernels
