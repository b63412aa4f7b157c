// Inputs with exactly predictable results, and the check of outputs against
// them (nccl-tests' #wrong). Values are small integers so that sums, maxima
// and products are exact in every dtype; Avg is checked against the same
// float32 (float64 for double) division the library performs.
#pragma once

#include <cstddef>
#include <string_view>

#include "strata/strata.h"

struct CheckSpec {
  std::string_view collective;
  strataDataType_t dtype;
  strataRedOp_t op;
  int rank, nranks, root;
  size_t count;  // elements per rank block as the C API counts them
};

// Fills this rank's send buffer.
void fillInput(const CheckSpec& s, void* send, size_t sendElems);
// Counts wrong elements of this rank's output.
size_t countWrong(const CheckSpec& s, const void* recv);
