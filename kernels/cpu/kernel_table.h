// The dispatch table filled by one instruction-set variant of reduce_impl.inc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "strata/strata.h"

namespace strata::kernels {

using ReduceFn = void (*)(void* out, const void* a, const void* b, size_t n);
using DivideFn = void (*)(void* out, const void* in, size_t n, uint64_t divisor);

struct KernelTable {
  ReduceFn reduce[strataNumTypes][strataNumOps] = {};
  DivideFn divide[strataNumTypes] = {};
};

namespace generic { void fillTable(KernelTable&); }
namespace avx2 { void fillTable(KernelTable&); }
namespace avx512 { void fillTable(KernelTable&); }

}  // namespace strata::kernels
