// Runs a Plan on one rank: connects the links it needs, then runs its phases
// in order, progressing all flows of a phase fragment by fragment (so that
// receiving, reducing and forwarding overlap), checking each operation's
// descriptor against the peer's, and finally drains buffered sends.
#pragma once

#include <cstdint>
#include <vector>

#include "algo/plan.h"
#include "algo/select.h"
#include "exec/exec_probe.h"
#include "exec/segments.h"

namespace strata {

class LinkSet;

// Where a plan's buffer references point.
struct Buffers {
  const void* send = nullptr;
  void* recv = nullptr;
  const std::vector<P2POp>* p2p = nullptr;  // for p2p plans: per-op buffers
  // Fused operations: send / recv made of pieces (replace send / recv when set).
  const Segments* sendPieces = nullptr;
  const Segments* recvPieces = nullptr;
};

// The bytes a call of `plan` touches on this rank: its output, and its input
// where that lies apart from the output (out of place; fused pieces of their
// own). Outputs are streamed from this rank's share of the cache on
// (LinkSet::streamedOutputBytes): an out-of-place all-reduce of half that
// share fills it.
size_t bytesTouched(const Plan& plan, const Buffers& buffers);

// `probe` (optional) receives the wait time and, when tracing, phase spans.
void executePlan(LinkSet& comm, const Plan& plan, const Buffers& buffers,
                 ExecProbe* probe = nullptr);

}  // namespace strata
