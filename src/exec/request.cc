#include "exec/request.h"

#include <cstdint>

#include "core/dtype.h"
#include "core/error.h"
#include "core/memory.h"
#include "algo/algorithms.h"
#include "algo/plan_cache.h"
#include "exec/executor.h"
#include "exec/tiny_run.h"
#include "obs/op_clock.h"

namespace strata {

namespace {

// Bytes of `count` elements times `blocks`, or an error naming the overflow.
// At most 2^48 - 1 (256 TiB, beyond a 48-bit address space): the operation
// descriptor sends counts as 48 bits (algo/plan.h).
size_t bytesOf(const char* fn, size_t count, size_t elem, size_t blocks) {
  size_t bytes;
  if (__builtin_mul_overflow(count, elem, &bytes) || __builtin_mul_overflow(bytes, blocks, &bytes) ||
      bytes >= (size_t(1) << 48))
    fail(strataInvalidArgument, "%s: count %zu x %zu bytes x %zu blocks overflows the address space (256 TiB or more)",
         fn, count, elem, blocks);
  return bytes;
}

bool overlaps(const void* a, size_t an, const void* b, size_t bn) {
  auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return an && bn && x < y + bn && y < x + an;
}

// `maybeDevice`: whether the process can hold device pointers (deviceMemoryPossible).
void validateFully(const char* fn, Request& r, bool maybeDevice);

// The request was just written field by field (make() in api/coll_api.cc);
// the comparisons are ordered so that no two of its adjacent 4-byte fields
// (dtype, redop, root) are compared next to each other, which the compiler
// would merge into one 8-byte load that stalls on the two narrow stores
// (measured: most of validate's time on a repeated 8-byte broadcast).
bool sameCall(const CallMemo& m, const Request& r) {
  return m.valid && m.coll == r.coll && m.dtype == r.dtype && m.send == r.send && m.redop == r.redop &&
         m.recv == r.recv && m.root == r.root && m.count == r.count;
}

}  // namespace

void validate(const char* fn, Request& r) {
  CallMemo& memo = r.comm->lastValidCall;
  // Host memory stays host memory while no CUDA is loaded in the process.
  const bool maybeDevice = deviceMemoryPossible();
  // A repeated call reads no clock here: it is timed where it runs (a tiny
  // one only one call in kTinyTimedEvery, exec/tiny_run.h). Another is timed
  // from now, its checks included.
  if (!maybeDevice && sameCall(memo, r)) {
    r.inPlace = memo.inPlace;
    r.onDevice = false;
    return;
  }
  memo.valid = false;
  r.calledTick = opclock::now();
  validateFully(fn, r, maybeDevice);  // throws on bad input: nothing remembered
  if (!maybeDevice) memo = CallMemo{true, r.coll, r.send, r.recv, r.count, r.dtype, r.redop, r.root, r.inPlace};
}

void validateQueued(const char* fn, Request& r) {
  r.calledTick = 0;
  validateFully(fn, r, deviceMemoryPossible());
}

namespace {

// observedTinyRun, below.
void observedTinyRun(Comm& c, TinyPlan& tiny, const Plan& plan, const Buffers& bufs, uint64_t calledTick);

// Remembers `plan`'s compiled form for a repeat of `r` (runRepeatedCall), if
// `r` runs on the thread that validated it (Request::remembersPlan) and is the
// call its communicator validated last.
void rememberTinyPlan(Comm& c, const Request& r, Plan* plan) {
  CallMemo& m = c.lastValidCall;
  if (!r.remembersPlan || r.coll == Coll::kBarrier || !sameCall(m, r)) return;
  m.tinyPlan = plan;
  m.planEvictions = c.plans().evictions();
}

}  // namespace

bool runRepeatedCall(Request& r) {
  Comm& c = *r.comm;
  const CallMemo& m = c.lastValidCall;
  if (!m.tinyPlan || !sameCall(m, r) || m.planEvictions != c.plans().evictions()) return false;
  // CUDA loaded since the checks could make these pointers device memory
  // only if their host memory was unmapped and the driver handed the same
  // addresses out again. The repeats that are timed (one in kTinyTimedEvery)
  // look for CUDA as every check does; the others only read whether a look
  // found it, and skip the coarse clock's read (callgrind: ~50 of the ~820
  // instructions of a repeated 8-byte broadcast).
  if (m.tinyPlan->tiny->untimedLeft == 0 ? deviceMemoryPossible() : deviceMemoryFound()) return false;
  if (c.failed()) c.throwFailed();
  Plan& plan = *m.tinyPlan;
  OpDesc& d = plan.ops[0];
  d.seq = c.nextSeq();
  d.fusedTensors = 0;
  d.layout = 0;
  observedTinyRun(c, *plan.tiny, plan, Buffers{r.send, r.recv, nullptr}, 0);
  return true;
}

namespace {

void validateFully(const char* fn, Request& r, bool maybeDevice) {
  Comm& c = *r.comm;
  const int n = c.nranks(), me = c.rank();
  if (!validDtype(r.dtype)) fail(strataInvalidArgument, "%s: invalid datatype %d", fn, int(r.dtype));
  bool reduces = r.coll == Coll::kAllReduce || r.coll == Coll::kReduceScatter || r.coll == Coll::kReduce;
  if (reduces && !validRedOp(r.redop))
    fail(strataInvalidArgument, "%s: invalid reduction operator %d", fn, int(r.redop));
  bool rooted = r.coll == Coll::kBroadcast || r.coll == Coll::kReduce;
  if (rooted && (r.root < 0 || r.root >= n))
    fail(strataInvalidArgument, "%s: root %d is out of range for %d ranks", fn, r.root, n);
  if ((r.coll == Coll::kSend || r.coll == Coll::kRecv) && (r.root < 0 || r.root >= n))
    fail(strataInvalidArgument, "%s: peer %d is out of range for %d ranks", fn, r.root, n);
  const size_t e = dtypeSize(r.dtype);
  size_t sendBytes = 0, recvBytes = 0;
  bool needSend = true, needRecv = true;
  switch (r.coll) {
    case Coll::kAllReduce: sendBytes = recvBytes = bytesOf(fn, r.count, e, 1); break;
    case Coll::kReduceScatter:
      sendBytes = bytesOf(fn, r.count, e, size_t(n));
      recvBytes = bytesOf(fn, r.count, e, 1);
      break;
    case Coll::kAllGather:
      sendBytes = bytesOf(fn, r.count, e, 1);
      recvBytes = bytesOf(fn, r.count, e, size_t(n));
      break;
    case Coll::kBroadcast:
      sendBytes = recvBytes = bytesOf(fn, r.count, e, 1);
      needSend = me == r.root;
      break;
    case Coll::kReduce:
      sendBytes = recvBytes = bytesOf(fn, r.count, e, 1);
      needRecv = me == r.root;
      break;
    case Coll::kAllToAll: sendBytes = recvBytes = bytesOf(fn, r.count, e, size_t(n)); break;
    case Coll::kSend: sendBytes = bytesOf(fn, r.count, e, 1); needRecv = false; break;
    case Coll::kRecv: recvBytes = bytesOf(fn, r.count, e, 1); needSend = false; break;
    case Coll::kBarrier: return;
  }
  if (r.count == 0) return;
  if (needSend && !r.send) fail(strataInvalidArgument, "%s: sendbuff is NULL with count %zu", fn, r.count);
  if (needRecv && !r.recv) fail(strataInvalidArgument, "%s: recvbuff is NULL with count %zu", fn, r.count);
  const bool sendOnDevice = maybeDevice && needSend && memoryKindOf(r.send) == MemoryKind::kDevice;
  const bool recvOnDevice = maybeDevice && needRecv && memoryKindOf(r.recv) == MemoryKind::kDevice;
  if (needSend && needRecv && sendOnDevice != recvOnDevice)
    fail(strataInvalidArgument, "%s: sendbuff is %s memory but recvbuff is %s memory; give both on the device "
         "or both on the host", fn, sendOnDevice ? "CUDA device" : "host", recvOnDevice ? "CUDA device" : "host");
  r.onDevice = sendOnDevice || recvOnDevice;
  if (!needSend || !needRecv) {
    r.inPlace = r.send == r.recv;
    return;
  }
  const auto* s = static_cast<const uint8_t*>(r.send);
  auto* d = static_cast<uint8_t*>(r.recv);
  switch (r.coll) {
    case Coll::kReduceScatter: r.inPlace = s + size_t(me) * recvBytes == d; break;
    case Coll::kAllGather: r.inPlace = d + size_t(me) * sendBytes == s; break;
    default: r.inPlace = s == d; break;
  }
  if (!r.inPlace && overlaps(s, sendBytes, d, recvBytes))
    fail(strataInvalidArgument, "%s: sendbuff and recvbuff overlap without being the in-place layout",
         fn);
}

}  // namespace

namespace {

// Runs a plan (`execute(probe)`) with the communicator's observer around it
// (flight recorder, statistics, trace); `publishAtStart`, `timeWeight`:
// Observer::begin's.
template <class Execute>
void observedRun(Comm& c, const Plan& plan, bool p2p, uint64_t startTick, bool publishAtStart,
                 uint32_t timeWeight, Execute&& execute) {
  Observer& obs = c.observer();
  ExecProbe probe;
  probe.tracing = obs.tracing();
  probe.longWaits = &obs;
  uint64_t id = obs.begin(plan, p2p, startTick, publishAtStart, timeWeight);
  try {
    execute(&probe);
  } catch (const std::exception& e) {
    obs.end(id, plan, probe, e.what());
    throw;
  }
  obs.end(id, plan, probe, nullptr);
}

// A compiled tiny plan's call (exec/tiny_run.h) with the observer's
// repeated-call record (Observer::beginRepeated), or its general one where
// the plan's facts could not be worked out once.
void observedTinyRun(Comm& c, TinyPlan& tiny, const Plan& plan, const Buffers& bufs, uint64_t calledTick) {
  const uint32_t timeWeight = nextTinyTimeWeight(tiny, calledTick != 0);
  if (!tiny.observable) {
    observedRun(c, plan, false, calledTick, false, timeWeight,
                [&](ExecProbe* probe) { runTinyPlan(c, tiny, plan, bufs, probe); });
    return;
  }
  Observer& obs = c.observer();
  ExecProbe probe;
  probe.longWaits = &obs;
  obs.beginRepeated(plan, tiny.observed, calledTick, timeWeight);
  try {
    runTinyPlan(c, tiny, plan, bufs, &probe);
  } catch (const std::exception& e) {
    obs.endRepeated(plan, probe, e.what());
    throw;
  }
  obs.endRepeated(plan, probe, nullptr);
}

// observedRun of the general executor.
void observedExecute(Comm& c, const Plan& plan, const Buffers& bufs, bool p2p, uint64_t startTick = 0) {
  observedRun(c, plan, p2p, startTick, true, 1,
              [&](ExecProbe* probe) { executePlan(c, plan, bufs, probe); });
}

}  // namespace

void runCollective(Request& r, const FusedBuffers* fused) {
  Comm& c = *r.comm;
  if (c.failed()) c.throwFailed();
  if (r.count == 0 && r.coll != Coll::kBarrier) return;
  uint8_t barrierIn = 1, barrierOut = 0;
  OpDesc d;
  d.coll = r.coll;
  d.dtype = r.dtype;
  d.redop = r.redop;
  d.root = r.root;
  d.count = r.count;
  d.seq = c.nextSeq();
  if (fused) {
    d.fusedTensors = fused->tensors;
    d.layout = fused->layout;
  }
  Buffers bufs{r.send, r.recv, nullptr};
  if (fused) bufs = Buffers{nullptr, nullptr, nullptr, fused->send, fused->recv};
  if (r.coll == Coll::kBarrier) {  // an all-reduce of one byte
    d.count = 1;
    d.dtype = strataUint8;
    d.redop = strataMax;
    bufs = Buffers{&barrierIn, &barrierOut, nullptr};
  }
  PlanKey key{r.coll, d.count, d.dtype, d.redop, r.root, r.inPlace};
  Plan* plan = c.plans().find(key);
  if (!plan) {  // the planner's arguments are made only when a plan is built
    CollArgs a;
    a.coll = r.coll;
    a.rank = c.rank();
    a.nranks = c.nranks();
    a.count = d.count;
    a.dtype = d.dtype;
    a.redop = d.redop;
    a.root = r.root;
    a.inPlace = r.inPlace;
    a.chunkBytes = pipelineSliceBytes(c.config().chunkBytes, c.linkCapacity());
    a.topo = &c.topology();
    a.streamedOutputBytes = c.streamedOutputBytes();
    plan = c.plans().insert(key, buildCollectivePlan(a, d, c.config()));
  }
  plan->ops[0].seq = d.seq;
  plan->ops[0].fusedTensors = d.fusedTensors;
  plan->ops[0].layout = d.layout;
  // A plan of one packet per flow over shm runs compiled from its second
  // call on (exec/tiny_run.h); traced calls keep the phase spans of the
  // general executor.
  const bool tinyAllowed = !fused && c.config().tinyPath && !c.observer().tracing();
  if (tinyAllowed && plan->tiny) {
    rememberTinyPlan(c, r, plan);
    observedTinyRun(c, *plan->tiny, *plan, bufs, r.calledTick);
    return;
  }
  observedExecute(c, *plan, bufs, false, r.calledTick);
  if (tinyAllowed && !plan->tinyChecked) {
    plan->tinyChecked = true;
    plan->tiny = compileTinyPlan(c, *plan);
    if (plan->tiny) plan->tiny->observable = c.observer().repeatFacts(*plan, plan->tiny->observed);
  }
}

void runP2P(Comm& comm, const std::vector<Request>& reqs) {
  if (comm.failed()) comm.throwFailed();
  std::vector<P2POp> ops;
  for (const Request& r : reqs) {
    if (r.count == 0) continue;
    P2POp op;
    op.isSend = r.coll == Coll::kSend;
    op.peer = r.root;
    op.sendbuff = r.send;
    op.recvbuff = r.recv;
    op.count = r.count;
    op.dtype = r.dtype;
    ops.push_back(op);
  }
  if (ops.empty()) return;
  Plan plan = buildP2PPlan(ops, comm.rank(), comm.nranks());
  observedExecute(comm, plan, Buffers{nullptr, nullptr, &ops}, true);
}

void hostAllGather(Comm& comm, const uint64_t* mine, uint64_t* all, size_t count) {
  Request r;
  r.comm = &comm;
  r.coll = Coll::kAllGather;
  r.send = mine;
  r.recv = all;
  r.count = count;
  r.dtype = strataUint64;
  runCollective(r);
}

void runTeamAllReduce(Comm& comm, const Team& team, void* buf, size_t count, strataDataType_t dtype,
                      strataRedOp_t op) {
  if (comm.failed()) comm.throwFailed();
  OpDesc d;
  d.coll = Coll::kAllReduce;
  d.dtype = dtype;
  d.redop = op;
  d.root = 0;
  d.count = count;
  d.seq = comm.nextSeq();
  if (count == 0 || team.size() < 2) return;
  Plan plan;
  plan.ops.push_back(d);
  plan.elemSize = dtypeSize(dtype);
  plan.dtype = dtype;
  plan.redop = op;
  plan.nranks = team.size();
  plan.algorithm = "team_ring";
  emitRingAllReduceInPlace(plan, team, at(Buf::kRecv, 0), count,
                           pipelineSliceBytes(comm.config().chunkBytes, comm.linkCapacity()), false);
  plan.seal();
  observedExecute(comm, plan, Buffers{buf, buf, nullptr}, false);
}

}  // namespace strata
