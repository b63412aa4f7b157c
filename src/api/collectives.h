// Argument checking and execution of collectives and send/recv, shared by
// the immediate path and the group path (group.cc).
#pragma once

#include "algo/plan.h"
#include "algo/select.h"
#include "core/comm.h"

namespace strata {

// One requested operation, fully validated.
struct Request {
  Comm* comm = nullptr;
  Coll coll = Coll::kAllReduce;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  strataDataType_t dtype = strataFloat32;
  strataRedOp_t redop = strataSum;
  int root = 0;  // root, or peer for send/recv
  bool inPlace = false;
};

// Throws strataInvalidArgument naming the problem; fills inPlace.
void validate(const char* fn, Request& r);
// Runs one collective now (blocking for host buffers).
void runCollective(Request& r);
// Runs the send/recv requests of one communicator as one group.
void runP2P(Comm& comm, const std::vector<Request>& ops);

// Group state of the calling thread (strataGroupStart/End).
bool inGroup();
void enqueue(const Request& r);

}  // namespace strata
