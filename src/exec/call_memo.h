// The last call validate() (exec/request.cc) passed on a communicator.
// Training loops issue the same collective on the same buffers step after
// step; a call equal to the memo in every argument needs none of the checks
// again (they depend on nothing else while no device memory can exist), and
// the call skips them: the repeated-call fast path's first part.
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata {

struct CallMemo {
  const void* send = nullptr;
  const void* recv = nullptr;
  size_t count = 0;
  uint64_t shape = ~uint64_t(0);  // collective, dtype, operator, root (see request.cc); ~0: none
  bool inPlace = false;
  void forget() { shape = ~uint64_t(0); }
};

}  // namespace strata
