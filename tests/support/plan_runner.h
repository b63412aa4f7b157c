// Runs one collective's plans with the real executor on n ranks (one thread
// each) over bounded in-memory links with tiny slots and pipeline slices, and
// checks every rank's output against the float64 / exact reference (all-reduce
// results must also be bitwise identical on every rank).
#pragma once

#include <string>

#include "algo/plan.h"
#include "topo/topology.h"

namespace strata::test {

// `algo`: forced STRATA_ALGO value ("" = the cost model's choice). `topo`:
// the placement hierarchical algorithms see (nullptr: none; its
// linkBufferBytes, when set, is what the in-memory links buffer). Returns "" or
// the first problem found. `pieceElems` > 0: the send and receive buffers are
// scattered over separate allocations of about that many elements each (as
// fusion lays tensors out), seen by the plan as one buffer made of pieces.
std::string runPlanCase(Coll coll, const char* algo, bool inPlace, int n, size_t count, strataDataType_t dtype,
                        strataRedOp_t op, int root, const Topology* topo = nullptr,
                        size_t pieceElems = 0);

}  // namespace strata::test
