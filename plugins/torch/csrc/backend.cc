// StrataBackend's life cycle: bootstrap through the c10d Store, the worker
// that runs queued operations, coalescing, split, shutdown and abort. The
// collectives themselves are in collectives.cc.
#include "backend.h"

#include <c10/util/Exception.h>

#include <sched.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>

namespace strata_torch {

namespace {

// The unique id travels through the store under a key numbered by how many
// strata backends this rank made on this store before: every rank makes them
// in the same order, so the numbers agree, and a store shared by several
// backends (one per device type, say) never hands one the other's id.
strataUniqueId exchangeUniqueId(const c10::intrusive_ptr<c10d::Store>& store, int rank) {
  const int64_t nth = store->add("strata/backends_made_by_rank_" + std::to_string(rank), 1);
  const std::string key = "strata/unique_id_" + std::to_string(nth);
  strataUniqueId id;
  if (rank == 0) {
    if (strataGetUniqueId(&id) != strataSuccess)
      C10_THROW_ERROR(DistBackendError,
                      std::string("strata: making the communicator's unique id failed: ") + strataGetLastError(nullptr));
    store->set(key, std::vector<uint8_t>(id.internal, id.internal + sizeof id.internal));
  } else {
    std::vector<uint8_t> bytes = store->get(key);  // waits, up to the store's timeout
    TORCH_CHECK(bytes.size() == sizeof id.internal, "strata: the unique id in the store has ", bytes.size(),
                " bytes, expected ", sizeof id.internal, " (was it written by another strata version?)");
    std::memcpy(id.internal, bytes.data(), bytes.size());
  }
  return id;
}

int envInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

// Whether a worker thread runs the operations, overlapping them with the
// caller's compute, or the caller's thread does (see OpQueue).
// STRATA_TORCH_OVERLAP=1 or 0 decides; unset (or "auto"), overlap only when
// the cores this process may use leave one spare for each local rank's
// worker. Local ranks: LOCAL_WORLD_SIZE (torchrun) or
// OMPI_COMM_WORLD_LOCAL_SIZE (mpirun); 1 when neither is set.
bool overlapOperations() {
  const char* v = std::getenv("STRATA_TORCH_OVERLAP");
  const std::string mode = v ? v : "";
  if (mode == "1") return true;
  if (mode == "0") return false;
  TORCH_CHECK_VALUE(mode.empty() || mode == "auto", "strata: STRATA_TORCH_OVERLAP='", mode,
                    "' must be 1 (a worker thread), 0 (the caller's thread) or auto");
  int local = std::max(1, envInt("LOCAL_WORLD_SIZE", envInt("OMPI_COMM_WORLD_LOCAL_SIZE", 1)));
  cpu_set_t cpus;
  int cores = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  return cores >= 2 * local;
}

}  // namespace

StrataBackend::StrataBackend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                             std::chrono::milliseconds timeout)
    : c10d::Backend(rank, size), store_(store), timeout_(timeout) {
  strataUniqueId id = exchangeUniqueId(store, rank);
  strataConfig_t config = STRATA_CONFIG_INITIALIZER;
  config.timeoutMs = int(std::min<int64_t>(std::max<int64_t>(timeout.count(), 1), INT_MAX));
  if (strataCommInitRankConfig(&comm_, size, id, rank, &config) != strataSuccess)
    C10_THROW_ERROR(DistBackendError, std::string("strata: creating the communicator (rank ") +
                                          std::to_string(rank) + " of " + std::to_string(size) +
                                          ") failed: " + strataGetLastError(nullptr));
  link_ = std::make_shared<CommLink>(comm_);
  queue_ = std::make_unique<OpQueue>([this](Batch& b) { run(b); }, overlapOperations());
}

StrataBackend::~StrataBackend() { shutdown(); }

void StrataBackend::shutdown() {
  if (queue_) queue_->stop("strata: the process group was shut down before this operation ran");
  if (link_) link_->cut();
  if (comm_) strataCommDestroy(comm_);
  comm_ = nullptr;
}

void StrataBackend::abort() {
  if (queue_) queue_->stop("strata: the process group was aborted before this operation ran");
  if (link_) link_->cut();
  if (comm_) strataCommAbort(comm_);
  comm_ = nullptr;
}

c10::intrusive_ptr<c10d::Backend> StrataBackend::split(const c10::intrusive_ptr<c10d::Store>& store,
                                                       const std::vector<int>& ranks,
                                                       const c10::intrusive_ptr<Options>& opts) {
  auto me = std::find(ranks.begin(), ranks.end(), rank_);
  if (me == ranks.end()) return nullptr;  // not a member of the new group
  auto timeout = opts ? opts->timeout : timeout_;
  auto child = c10::make_intrusive<StrataBackend>(store, int(me - ranks.begin()), int(ranks.size()), timeout);
  if (opts) child->setGroupUid(opts->group_name);
  child->setProfilingName(profilingName_);
  return child;
}

c10::intrusive_ptr<c10d::Backend::Options> StrataBackend::getBackendOptions() {
  auto opts = c10::make_intrusive<Options>("strata", timeout_);
  opts->group_name = getGroupUid();
  return opts;
}

void StrataBackend::startCoalescing() {
  TORCH_CHECK(!coalescing_, "strata: startCoalescing called twice without endCoalescing");
  coalescing_ = true;
  coalesced_ = Batch{{}, c10::make_intrusive<StrataWork>(rank_, c10d::OpType::COALESCED, link_, -1,
                                                          titles_.of(c10d::OpType::COALESCED))};
}

c10::intrusive_ptr<c10d::Work> StrataBackend::endCoalescing() {
  TORCH_CHECK(coalescing_, "strata: endCoalescing called without startCoalescing");
  coalescing_ = false;
  auto work = coalesced_.work;
  if (!work->placed()) work->runsOn(std::nullopt);  // nothing was added
  queue_->push(std::move(coalesced_), /*callerWaits=*/work->stream().has_value());
  coalesced_ = Batch{};
  return work;
}

c10::intrusive_ptr<c10d::Work> StrataBackend::submit(c10d::OpType type, const std::vector<at::Tensor>& inputs,
                                                     std::vector<at::Tensor> outputs, std::vector<OpSteps> ops,
                                                     bool waits, const DeviceCall& call, int sourceRank) {
  TORCH_CHECK(comm_, "strata: the process group was shut down or aborted");
  if (type != c10d::OpType::SEND && type != c10d::OpType::RECV && type != c10d::OpType::RECVANYSOURCE)
    ++collectivesIssued_;
  if (coalescing_) {
    coalesced_.work->runsOn(call.stream());
    for (OpSteps& op : ops) coalesced_.ops.push_back(std::move(op));
    coalesced_.work->addOutputs(outputs);
    return coalesced_.work;
  }
  auto work = c10::make_intrusive<StrataWork>(rank_, type, link_, sourceRank, titles_.of(type), inputs);
  work->runsOn(call.stream());
  work->addOutputs(outputs);
  queue_->push(Batch{std::move(ops), work}, waits || call.stream().has_value());
  return work;
}

void StrataBackend::run(Batch& batch) {
  std::optional<c10::StreamGuard> onComm;
  if (batch.work->stream()) onComm.emplace(*batch.work->stream());
  stream_ = batch.work->stream() ? cudaStreamOf(*batch.work->stream()) : nullptr;
  for (OpSteps& op : batch.ops)
    if (op.before) op.before();
  if (batch.ops.size() == 1) {
    batch.ops[0].issue();
  } else if (batch.ops.size() > 1) {
    check(strataGroupStart(), "strataGroupStart");
    try {
      for (OpSteps& op : batch.ops) op.issue();
    } catch (...) {
      strataGroupEnd();
      throw;
    }
    check(strataGroupEnd(), "strataGroupEnd");
  }
  for (OpSteps& op : batch.ops)
    if (op.after) op.after();
}

void StrataBackend::check(strataResult_t rc, const char* call) const {
  if (rc == strataSuccess) return;
  // torch's checks (and its own tests) know a timeout by " Timed out ": say it
  // first, strata's detail (who never arrived, where each rank was) after it.
  const std::string what = rc == strataTimeout ? " Timed out " : " ";
  C10_THROW_ERROR(DistBackendError, std::string("strata ") + call + " failed on rank " + std::to_string(rank_) + ":" +
                                        what + "(" + strataGetErrorString(rc) + "): " + strataGetLastError(comm_));
}

void StrataBackend::checkPeer(int peer, const char* method, const char* what) const {
  TORCH_CHECK_VALUE(peer >= 0 && peer < size_, "strata ", method, ": ", what, " ", peer,
                    " is not a rank of this group (size ", size_, ")");
}

}  // namespace strata_torch
