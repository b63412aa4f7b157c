// One validated operation of the C API, and running it: shared by the
// immediate path, groups (src/api/group.cc) and fusion (src/fusion).
#pragma once

#include <cstdint>
#include <vector>

#include "algo/plan.h"
#include "algo/ring_blocks.h"
#include "algo/select.h"
#include "core/comm.h"
#include "exec/segments.h"

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
  bool onDevice = false;    // the buffers are CUDA device memory (src/device runs it)
  void* stream = nullptr;   // the cudaStream_t a device operation is ordered on
  // The operation clock (obs/op_clock.h) when validate() began checking the
  // call, for a call run at once: its record starts there. 0: read the clock
  // when the call runs (queued requests; a repeat of the last call, whose
  // checks are skipped, validate()).
  uint64_t calledTick = 0;
  // Run at once by the thread that validated it (the API's immediate path):
  // a compiled tiny plan it runs is remembered in the communicator's
  // CallMemo for its repeats (runRepeatedCall). False for the calls other
  // threads run (a fusion context's), which must not touch the memo.
  bool remembersPlan = false;
};

// Throws strataInvalidArgument naming the problem; fills inPlace.
void validate(const char* fn, Request& r);
// validate() for a request that runs later (a group's, a fusion context's):
// the same checks, without reading the clock (its record starts when it
// runs: calledTick 0) or touching the repeated-call memo, which remembers
// calls run at once (~12 of a fusion add's ~38 ns).
void validateQueued(const char* fn, Request& r);
// The repeated-call fast path: a host call equal in every argument to its
// communicator's last validated one, whose compiled tiny plan ran last time
// (CallMemo::tinyPlan), runs that plan at once, as runCollective would run
// it after validate(). False: not such a call (validate and run it as any other).
bool runRepeatedCall(Request& r);
// A fused operation's buffers (made of pieces) and what its descriptor says.
struct FusedBuffers {
  const Segments* send = nullptr;
  const Segments* recv = nullptr;
  uint16_t tensors = 0;
  uint32_t layout = 0;
};

// Runs one collective now (blocking for host buffers). With `fused`, the
// request's send / recv pointers are ignored and its pieces are used.
void runCollective(Request& r, const FusedBuffers* fused = nullptr);
// Runs the send/recv requests of one communicator as one group.
void runP2P(Comm& comm, const std::vector<Request>& ops);
// Every rank's `count` words, rank by rank, into `all` (nranks x count): the
// library's own small exchanges (fusion negotiation, cuda_ipc set-up and steps).
void hostAllGather(Comm& comm, const uint64_t* mine, uint64_t* all, size_t count);
// An in-place ring all-reduce of `count` elements of host memory at `buf`
// among the ranks of `team` only, every other rank of the communicator
// running its own team's at the same point (so the sequence numbers stay in
// step): the stage between nodes of cuda_ipc's all-reduce.
void runTeamAllReduce(Comm& comm, const Team& team, void* buf, size_t count, strataDataType_t dtype,
                      strataRedOp_t op);

}  // namespace strata
