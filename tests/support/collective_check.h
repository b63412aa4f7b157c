// The oracle for one rank's output of any collective, shared by the
// in-memory plan tests and the multi-process tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "algo/plan.h"

namespace strata::test {

bool sendsBlocks(Coll c);  // send buffer holds one block per rank
bool recvsBlocks(Coll c);  // receive buffer holds one block per rank

// Where a call's arguments point: send and recv as given, or, in place, where
// strata.h's in-place layout puts them inside recv (send's contents, which
// hold the input, copied there).
struct CallArgs {
  const void* send;
  void* recv;
};
CallArgs layOutCall(Coll coll, size_t count, size_t elem, int rank, int nranks, bool inPlace, const uint8_t* send,
                    uint8_t* recv);

// Checks `out` (rank `rank`'s receive buffer) given every rank's input.
// Returns "" or a sentence describing the first problem.
std::string checkOutput(Coll coll, strataDataType_t dtype, strataRedOp_t op, int nranks, int rank,
                        int root, size_t count, const std::vector<const void*>& inputs,
                        const void* out);

}  // namespace strata::test
