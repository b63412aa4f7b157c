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
    if (failCode_ != strataSuccess)
      fail(failCode_, "the fusion context failed earlier: %s", failMessage_.c_str());
    if (!liveKeys_.insert(key))
      fail(strataInvalidUsage, "strataFusionAllReduce: key %llu was added before and has not completed yet",
           (unsigned long long)key);
    const bool wasEmpty = pending_.empty();
    if (wasEmpty) deadline_ = std::chrono::steady_clock::now() + cycle_;
    comm_.fusionBusy = true;
    pending_.push_back(Pending{key, r, cb, userData, done});
    pendingBytes_ += r.count * dtypeSize(r.dtype);
    addedSinceRound_ = true;
    // The thread only needs waking when this add changes what it waits for:
    // a first tensor starts the cycle clock, a full buffer flushes now.
    // Waking it on every add cost a context switch per tensor.
    wake = wasEmpty || pendingBytes_ >= threshold_;
  }
  if (wake) wake_.notify_all();
  return done;
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
  wake_.notify_all();
  settled_.wait(lock, [&] { return (pending_.empty() && inRound_ == 0) || failCode_ != strataSuccess; });
  --synchronizing_;
  if (failCode_ != strataSuccess) fail(failCode_, "%s", failMessage_.c_str());
}

void FusionContext::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    if (pending_.empty()) {
      comm_.fusionBusy = false;
      settled_.notify_all();
      if (stop_) return;
      wake_.wait(lock);
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
      wake_.wait_until(lock, deadline_);
      continue;
    }
    flushAsked_ = stop_;  // a stopping context keeps flushing until empty
    addedSinceRound_ = false;
    snapshot_.clear();
    snapshot_.swap(pending_);  // both keep their capacity from round to round
    pendingBytes_ = 0;
    inRound_ = snapshot_.size();
    lock.unlock();
    runRound(snapshot_, reason);
    lock.lock();
    inRound_ = 0;
    if (failCode_ != strataSuccess) {
      std::vector<Pending> left;
      left.swap(pending_);
      pendingBytes_ = 0;
      lock.unlock();
      for (Pending& p : left) finish(p, failCode_, failMessage_);
      lock.lock();
      settled_.notify_all();
      if (stop_) return;
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
    for (const Pending* p : done) liveKeys_.erase(p->key);  // before the callbacks, which may add them again
  }
  for (Pending* p : done) {
    if (p->cb) p->cb(p->key, r, p->userData);
    if (p->done) p->done->complete(r, error);
  }
}

void FusionContext::runRound(std::vector<Pending>& snapshot, Reason reason) {
  static const char* reasonName[] = {"full", "cycle", "flush"};
  std::vector<bool>& handled = handled_;
  handled.assign(snapshot.size(), false);
  try {
    std::vector<PendingKey>& keys = keys_;
    keys.clear();
    for (const Pending& p : snapshot) keys.push_back({p.key, p.req.count, p.req.dtype, p.req.redop});
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
      handled[i] = true;
    }
    // Fused all-reduces of what is ready everywhere, per (dtype, op), up to the threshold.
    std::vector<Request>& ready = ready_;
    std::vector<size_t>& index = readyIndex_;
    ready.clear();
    index.clear();
    for (size_t i : agreed.ready) {
      ready.push_back(snapshot[i].req);
      index.push_back(i);
    }
    std::vector<Bucket> buckets = planBuckets(ready, threshold_, comm_.nranks());
    std::vector<const Request*> members;
    std::vector<uint64_t> bucketKeys;
    std::vector<Pending*> finished;
    for (const Bucket& b : buckets) {
      members.clear();
      bucketKeys.clear();
      size_t bytes = 0;
      for (size_t m : b.members) {
        members.push_back(&ready[m]);
        bucketKeys.push_back(snapshot[index[m]].key);
        bytes += ready[m].count * dtypeSize(ready[m].dtype);
      }
      STRATA_INFO("fusion: rank %d flushes %zu tensors, %zu bytes, %s %s (reason: %s)", comm_.rank(),
                  members.size(), bytes, dtypeName(members[0]->dtype), redOpName(members[0]->redop),
                  reasonName[int(reason)]);
      if (members.size() == 1) {
        runCollective(ready[b.members[0]]);
      } else {
        runFused(members, &bucketKeys);
      }
      finished.clear();
      for (size_t m : b.members) {
        finished.push_back(&snapshot[index[m]]);
        handled[index[m]] = true;
      }
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
