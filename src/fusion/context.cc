#include "fusion/context.h"

#include <algorithm>

#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"
#include "fusion/fused_op.h"
#include "fusion/negotiate.h"
#include "fusion/buckets.h"

namespace strata {

void FusionCompletion::complete(strataResult_t r, const std::string& e) {
  std::lock_guard<std::mutex> lock(mu);
  done = true;
  result = r;
  error = e;
  cv.notify_all();
}

void FusionCompletion::wait() {
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return done; });
}

FusionContext::FusionContext(Comm& comm)
    : comm_(comm),
      threshold_(std::max<size_t>(comm.config().fusionThresholdBytes, 1)),
      cycle_(comm.config().fusionCycleUs) {
  ++comm.fusionContexts;
  thread_ = std::thread([this] { loop(); });
}

FusionContext::~FusionContext() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    flushAsked_ = true;
  }
  wake_.notify_all();
  thread_.join();
  --comm_.fusionContexts;
}

std::shared_ptr<FusionCompletion> FusionContext::add(uint64_t key, const Request& r, Callback cb, void* userData,
                                                     bool wantHandle) {
  auto done = wantHandle ? std::make_shared<FusionCompletion>() : nullptr;
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (failCode_ != strataSuccess || !liveKeys_.insert(key)) refuseAdd(key);
    const bool wasEmpty = pending_.empty();
    if (wasEmpty) {  // busy is cleared only once pending_ is empty (loop)
      deadline_ = std::chrono::steady_clock::now() + cycle_;
      comm_.fusionBusy = true;
    }
    if (cb) ++liveCallbacks_;
    pending_.push_back(Pending{key, r, cb, userData, done});
    pendingBytes_ += r.count * dtypeSize(r.dtype);
    addedSinceRound_ = addedSinceWait_ = true;
    // The thread only needs waking when this add changes what it waits for:
    // a first tensor starts the cycle clock (unless the thread sleeps on a
    // clock already, which rings no later than this tensor's deadline), a
    // full buffer flushes now. Waking it on every add cost a context switch
    // per tensor; on every step's first add, two per step.
    wake = (wasEmpty && !clockedWait_) || pendingBytes_ >= threshold_;
  }
  if (wake) wake_.notify_all();
  return done;
}

void FusionContext::refuseAdd(uint64_t key) {
  if (failCode_ != strataSuccess) fail(failCode_, "the fusion context failed earlier: %s", failMessage_.c_str());
  fail(strataInvalidUsage, "strataFusionAllReduce: key %llu was added before and has not completed yet",
       (unsigned long long)key);
}

void FusionContext::flush() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    flushAsked_ = true;
  }
  wake_.notify_all();
}

void FusionContext::synchronize() {
  std::unique_lock<std::mutex> lock(mu_);
  ++synchronizing_;  // every round flushes meanwhile, also tensors that callbacks add
  // While the context's thread runs no round and no tensor has a callback
  // (promised to run on that thread), this thread runs the rounds itself:
  // handing them to that thread and waiting to be woken cost two wake-ups,
  // ~13 us a step (1000 x 4 KiB, 2 ranks on shm).
  bool ranHere = false;
  while (!roundRunning_ && !pending_.empty() && liveCallbacks_ == 0 && failCode_ == strataSuccess) {
    runOneRound(lock, Reason::kFlush);
    ranHere = true;
  }
  if (ranHere) {
    if (pending_.empty() && failCode_ == strataSuccess) comm_.fusionBusy = false;
    settled_.notify_all();  // other threads waiting here
  }
  // The context's thread goes on where this one stopped (a callback, its
  // round, a failure's leftovers); it needs no wake-up when nothing is left.
  if (!pending_.empty() || roundRunning_ || failCode_ != strataSuccess || !ranHere) wake_.notify_all();
  settled_.wait(lock, [&] { return (pending_.empty() && inRound_ == 0) || failCode_ != strataSuccess; });
  --synchronizing_;
  if (failCode_ != strataSuccess) fail(failCode_, "%s", failMessage_.c_str());
}

void FusionContext::runOneRound(std::unique_lock<std::mutex>& lock, Reason reason) {
  flushAsked_ = stop_;  // a stopping context keeps flushing until empty
  addedSinceRound_ = false;
  snapshot_.clear();
  snapshot_.swap(pending_);  // both keep their capacity from round to round
  pendingBytes_ = 0;
  inRound_ = snapshot_.size();
  roundRunning_ = true;
  lock.unlock();
  runRound(snapshot_, reason);
  lock.lock();
  inRound_ = 0;
  roundRunning_ = false;
}

void FusionContext::waitClocked(std::unique_lock<std::mutex>& lock, std::chrono::steady_clock::time_point until) {
  addedSinceWait_ = false;
  clockedWait_ = true;
  wake_.wait_until(lock, until);
  clockedWait_ = false;
}

void FusionContext::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    if (roundRunning_) {  // synchronize() runs one on its caller's thread
      wake_.wait(lock);
      continue;
    }
    if (failCode_ != strataSuccess && !pending_.empty()) {
      // Added while a round failed: they fail too (their callbacks run here).
      std::vector<Pending> left;
      left.swap(pending_);
      pendingBytes_ = 0;
      lock.unlock();
      for (Pending& p : left) finish(p, failCode_, failMessage_);
      lock.lock();
      settled_.notify_all();
      continue;
    }
    if (pending_.empty()) {
      comm_.fusionBusy = false;
      settled_.notify_all();
      if (stop_) return;
      if (addedSinceWait_) {
        // Tensors came since the last wait: more may come soon; wait one
        // cycle on the clock, so that their adds need not wake this thread.
        waitClocked(lock, std::chrono::steady_clock::now() + cycle_);
      } else {
        wake_.wait(lock);
      }
      continue;
    }
    Reason reason;
    if (flushAsked_ || synchronizing_ > 0) {
      reason = Reason::kFlush;
    } else if (pendingBytes_ >= threshold_) {
      reason = Reason::kFull;
    } else if (std::chrono::steady_clock::now() >= deadline_) {
      reason = Reason::kCycle;
    } else {
      waitClocked(lock, deadline_);
      continue;
    }
    runOneRound(lock, reason);
    if (failCode_ != strataSuccess) {
      settled_.notify_all();
      if (stop_ && pending_.empty()) return;
      continue;
    }
    // Tensors not pending everywhere yet wait for the next cycle (or a new
    // add), so ranks waiting for a slow peer do not spin negotiation rounds.
    if (!pending_.empty() && !addedSinceRound_)
      deadline_ = std::chrono::steady_clock::now() + cycle_;
  }
}

void FusionContext::finish(Pending& p, strataResult_t r, const std::string& error) { finishAll({&p}, r, error); }

void FusionContext::finishAll(const std::vector<Pending*>& done, strataResult_t r, const std::string& error) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Before the callbacks, which may add them again. The keys are live and
    // distinct: as many as the set holds are all of it (a step's last bucket).
    const bool all = done.size() == liveKeys_.size();
    if (all) liveKeys_.clear();
    for (const Pending* p : done) {
      if (!all) liveKeys_.erase(p->key);
      if (p->cb) --liveCallbacks_;
    }
  }
  for (Pending* p : done) {
    if (p->cb) p->cb(p->key, r, p->userData);
    if (p->done) p->done->complete(r, error);
  }
}

void FusionContext::runRound(std::vector<Pending>& snapshot, Reason reason) {
  static const char* reasonName[] = {"full", "cycle", "flush"};
  std::vector<uint8_t>& handled = handled_;
  handled.assign(snapshot.size(), 0);
  size_t handledCount = 0;
  try {
    std::vector<PendingKey>& keys = keys_;
    keys.resize(snapshot.size());
    for (size_t i = 0; i < snapshot.size(); ++i) {
      const Pending& p = snapshot[i];
      keys[i] = PendingKey{p.key, p.req.count, p.req.dtype, p.req.redop};
    }
    Agreement agreed;
    try {
      agreed = negotiate(comm_, keys);
    } catch (const Error& e) {
      std::string list;
      for (size_t i = 0; i < keys.size() && i < 8; ++i)
        list += format("%s%llu", i ? ", " : "", (unsigned long long)keys[i].key);
      if (keys.size() > 8) list += ", ...";
      throw Error(e.code(), format("while the ranks agreed on which of this rank's %zu pending tensors "
                                   "(keys %s) are ready everywhere: %s", keys.size(), list.c_str(), e.what()));
    }
    for (auto& [i, why] : agreed.mismatched) {
      finish(snapshot[i], strataMismatch, why);
      handled[i] = 1;
      ++handledCount;
    }
    // Fused all-reduces of what is ready everywhere, per (dtype, op), up to the threshold.
    std::vector<const Request*>& ready = ready_;
    const std::vector<size_t>& index = agreed.ready;  // ready[m] is snapshot[index[m]]
    ready.resize(index.size());
    for (size_t m = 0; m < index.size(); ++m) ready[m] = &snapshot[index[m]].req;
    std::vector<Bucket> buckets = planBuckets(ready, threshold_, comm_.nranks());
    std::vector<const Request*>& members = members_;
    std::vector<uint64_t>& bucketKeys = bucketKeys_;
    std::vector<Pending*>& finished = finished_;
    for (const Bucket& b : buckets) {
      members.resize(b.members.size());
      bucketKeys.resize(b.members.size());
      finished.resize(b.members.size());
      for (size_t k = 0; k < b.members.size(); ++k) {
        const size_t m = b.members[k];
        Pending& p = snapshot[index[m]];
        members[k] = &p.req;
        bucketKeys[k] = p.key;
        finished[k] = &p;
      }
      if (logLevel() >= LogLevel::kInfo) {
        size_t bytes = 0;
        for (const Request* r : members) bytes += fusedBytes(*r, comm_.nranks());
        STRATA_INFO("fusion: rank %d flushes %zu tensors, %zu bytes, %s %s (reason: %s)", comm_.rank(),
                    members.size(), bytes, dtypeName(members[0]->dtype), redOpName(members[0]->redop),
                    reasonName[int(reason)]);
      }
      if (members.size() == 1) {
        runCollective(finished[0]->req);
      } else {
        runFused(members, &bucketKeys);
      }
      for (size_t m : b.members) handled[index[m]] = 1;
      handledCount += b.members.size();
      finishAll(finished, strataSuccess, "");
    }
  } catch (const Error& e) {
    std::lock_guard<std::mutex> lock(mu_);
    failCode_ = e.code();
    failMessage_ = format("fusion context: %s", e.what());
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lock(mu_);
    failCode_ = strataInternalError;
    failMessage_ = format("fusion context: %s", e.what());
  }
  std::vector<Pending> left;
  if (handledCount < snapshot.size())
    for (size_t i = 0; i < snapshot.size(); ++i)
      if (!handled[i]) left.push_back(std::move(snapshot[i]));
  std::unique_lock<std::mutex> lock(mu_);
  if (failCode_ != strataSuccess) {
    std::string msg = failMessage_;
    strataResult_t code = failCode_;
    lock.unlock();
    comm_.markFailed(code, msg);
    for (Pending& p : left) finish(p, code, msg);
    return;
  }
  // Not pending on every rank yet: back in front of the queue, in their order.
  for (Pending& p : left) pendingBytes_ += p.req.count * dtypeSize(p.req.dtype);
  pending_.insert(pending_.begin(), std::make_move_iterator(left.begin()), std::make_move_iterator(left.end()));
}

}  // namespace strata
