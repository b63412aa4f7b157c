// The matrix of collective calls the multi-process and multi-host tests run,
// and the runner that checks one call against the reference on one rank.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "algo/plan.h"
#include "strata/strata.h"

namespace strata::test {

struct Case {
  Coll coll;
  strataDataType_t dtype;
  strataRedOp_t op;
  size_t count;
  bool inPlace;
  size_t misalign;  // bytes added to buffer addresses
};

// Every collective x dtype x op x count (0, 1, 7, 1023) x placement, plus
// large odd counts (1048579 and 1048579/8 per block) for each collective.
std::vector<Case> allCases();
// Makes a case's call somewhere other than host memory (the GPU tests: device
// copies of the buffers and a stream). It gets the host buffers as runCase
// laid them out, with the call's arguments pointing into them, and leaves the
// call's output in recvMem.
using CaseCaller = std::function<strataResult_t(const Case& c, int root, std::vector<uint8_t>& sendMem,
                                                std::vector<uint8_t>& recvMem, const void* sendArg,
                                                void* recvArg, strataComm_t comm)>;

// Runs case `index` on this rank (through `caller` when given); returns "" or the problem.
std::string runCase(const Case& c, size_t index, int rank, int n, strataComm_t comm,
                    const CaseCaller& caller = {});
std::string describeCase(const Case& c);

}  // namespace strata::test
