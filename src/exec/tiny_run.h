// The executor's path for tiny operations: plans in which every flow moves
// one packet at most (the descriptor and a few values) over shared memory.
// Training loops repeat such calls (a loss all-reduce, a flag broadcast, a
// metrics gather) and they cost more in software than in data, so a plan like
// that is compiled once, after its first run (TinyPlan: each flow's links,
// which flows of its phase it must follow, the descriptor encoded), and every
// later call runs the compiled form: no per-call set-up, no fragment
// machinery, one packet written or read per flow, the descriptor patched with
// the call's sequence number and checked by one comparison. A wait that lasts
// takes the same Waiter as executor.cc (timeouts, liveness, what it waits
// for), made only then.
//
// On the wire it is the executor's format (the descriptor in front of the
// first bytes), so ranks may take either path for the same call; a tiny
// receiver also takes what a general sender cut into several packets.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "algo/plan.h"
#include "exec/exec_probe.h"
#include "exec/executor.h"
#include "obs/op_record.h"

namespace strata {

class LinkSet;
class Channel;

// One flow of a tiny plan, with its links looked up.
struct TinyFlow {
  FlowKind kind = FlowKind::kCopy;
  bool reduce = false, divides = false;  // divides: finalize of an average
  bool sendsDesc = false, expectsDesc = false;
  // A Recv with a descriptor into its destination, forwarding nothing: its
  // packet from a tiny sender is taken whole (TinyRun::receiveWhole).
  bool receivesWhole = false;
  int peer = -1;
  Channel* in = nullptr;   // Recv: where its packet comes from
  Channel* out = nullptr;  // Send: where it goes; Recv / Copy: the forward link
  Ref src, dst;
  size_t bytes = 0;
  // Earlier flows of its phase that must finish first: those to or from
  // the same peer in the same direction (they keep plan order) and the
  // flow whose destination is this flow's source (Flow::trails).
  uint32_t after = 0;
};

struct TinyPlan {
  std::vector<TinyFlow> flows;  // phase by phase, as in the plan
  // ops[0] encoded with seq 0, as sent in front of up to
  // kOpDescUnpaddedValues bytes of values (the first kOpDescBytes) and,
  // padded, in front of more (plan.h: opDescBytesBefore).
  uint8_t desc[kOpDescBytes], paddedDesc[kOpDescPaddedBytes];
  uint32_t untimedLeft = 0;     // calls to run before the next timed one
  uint32_t untimedRun = 0;      // calls run untimed since the last timed one
  // What the observer takes from the plan at each call (Observer::repeatFacts),
  // worked out after the plan is compiled; `observable` false: the
  // general Observer::begin / end.
  RepeatFacts observed;
  bool observable = false;
};

// The most a tiny flow's packet holds, descriptor included: the smallest shm
// slot (config.cc keeps STRATA_SHM_SLOT_BYTES at least this), so one always fits.
constexpr size_t kTinyPacketBytes = 4096;

// `plan` compiled for this rank, or null where it is not tiny: a flow of more
// than kTinyPacketBytes, in runs, or over a link other than shm; more than
// one operation (fusion); a phase of more than 32 flows. Every link the plan
// uses must exist (the plan has run once).
std::shared_ptr<TinyPlan> compileTinyPlan(LinkSet& links, const Plan& plan);

// Tiny calls read no clock but one in kTinyTimedEvery of each plan, timed as
// any other call: a pair of clock reads costs about a sixth of such a call
// (measured 30-40 ns of 200-300 on a 2-core VM). The timed call's time
// stands in the statistics for the untimed calls before it as well.
constexpr uint32_t kTinyTimedEvery = 16;
// The next call's OpFacts::timeWeight: 0 (not timed) or how many calls its
// time stands for. `timedAnyway`: the call was timed from its checks
// (Request::calledTick).
uint32_t nextTinyTimeWeight(TinyPlan& tiny, bool timedAnyway);

// Runs `plan` (its ops[0] is this call's descriptor) in its compiled form.
void runTinyPlan(LinkSet& links, const TinyPlan& tiny, const Plan& plan, const Buffers& buffers,
                 ExecProbe* probe);

}  // namespace strata
