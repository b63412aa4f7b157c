// The frame of the device path's layout tests, run on the CPU: every rank's
// buffers for one call are cut into pieces, each piece is staged
// (stagePiece, src/device/staged_request.h) into one area per rank held in
// this process, copied in as the GPU's 2D copies would, run on the areas by
// the test's own middle step (the host collective's result, or the cuda_ipc
// step's reductions and copies), copied out, and each rank's output is
// compared with the float64 reference for the whole call.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "device/staged_request.h"

namespace strata::test {

struct StagedCallCase {
  Coll coll;
  strataDataType_t dtype;
  strataRedOp_t op;
};

// The areas of all ranks for one piece, after its copies in.
struct StagedStep {
  std::vector<StagedPiece> pieces;           // one per rank
  std::vector<std::vector<uint8_t>> areas;   // one per rank; each piece's host buffers lie in its area
  int root = 0;
};

// Runs the piece on the areas; returns with a gtest failure to stop.
using StepRunner = std::function<void(StagedStep&)>;

// Every call of `c` for each world size in `worlds` (root n - 1), counts 1, 7
// and 1023, pieces of 1, 5, 64 and all elements, in place and out of place.
void checkStagedCalls(const StagedCallCase& c, const std::vector<int>& worlds, const StepRunner& run);

// Performs one 2D copy on host memory.
void copyRows(const RowCopy& c);

}  // namespace strata::test
