// Test helpers: random inputs per dtype, a float64 (or exact integer)
// reference for every reduction, and comparison with dtype-aware tolerance.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "strata/strata.h"

namespace strata::test {

size_t elemSize(strataDataType_t t);
bool isFloat(strataDataType_t t);
// Value of element i as double (half/bf16 decoded).
double load(strataDataType_t t, const void* base, size_t i);
// Stores v rounded/wrapped to the dtype.
void store(strataDataType_t t, void* base, size_t i, double v);

// Random values that keep every op exact for integers (wrapping handled by the
// reference) and well-conditioned for floats; never all zeros.
void fillRandom(strataDataType_t t, strataRedOp_t op, void* base, size_t count, uint64_t seed);

// Reduction of the `inputs` (one per rank) at element i, computed in float64
// for floats and in the type's wrapping integer arithmetic for integers.
double reduceReference(strataDataType_t t, strataRedOp_t op, const std::vector<const void*>& inputs,
                       size_t i);
// Whether `got` matches the reference within the dtype's tolerance for n inputs.
bool close(strataDataType_t t, strataRedOp_t op, double got, double want, int n,
           double magnitude);
// Checks count elements of out against the reduction of inputs (offset into
// each input by `inOffset` elements); returns the number of mismatches and
// describes the first in *first.
size_t checkReduced(strataDataType_t t, strataRedOp_t op, const void* out,
                    const std::vector<const void*>& inputs, size_t inOffset, size_t count,
                    std::string* first);

}  // namespace strata::test
