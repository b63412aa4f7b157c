// The fusion context (Horovod-style tensor fusion) behind strataFusion*:
// trainers add gradients one at a time as they become ready; a background
// thread flushes them in fused all-reduces when the pending bytes reach the
// fusion threshold, when the cycle time (STRATA_FUSION_CYCLE_US) passes, or
// on an explicit flush. Ranks may add tensors in different orders: every
// flush starts with a negotiation round in which the ranks agree on the keys
// pending everywhere (negotiate.h), so tensors are matched by key, never by
// position.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "exec/request.h"
#include "fusion/key_set.h"
#include "fusion/negotiate.h"
#include "strata/strata.h"

namespace strata {

// Completion of one added tensor, shared by the context and the caller's request handle.
struct FusionCompletion {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  strataResult_t result = strataSuccess;
  std::string error;
  void complete(strataResult_t r, const std::string& e);
  void wait();
};

class FusionContext {
 public:
  using Callback = void (*)(uint64_t key, strataResult_t result, void* userData);

  explicit FusionContext(Comm& comm);
  // Flushes what is pending, waits for it (or for its failure) and stops the thread.
  ~FusionContext();
  FusionContext(const FusionContext&) = delete;
  FusionContext& operator=(const FusionContext&) = delete;

  // Queues an all-reduce of a validated request under `key` (unique among
  // tensors not completed yet). Throws if the context failed or the key is
  // still pending or in flight.
  // `wantHandle`: return a completion to wait on (strataFusionRequest_t);
  // without one, the tensor's callback and synchronize() are what report it.
  std::shared_ptr<FusionCompletion> add(uint64_t key, const Request& r, Callback cb, void* userData,
                                        bool wantHandle = true);
  // Asks for a flush of everything pending now (returns at once).
  void flush();
  // Flushes until nothing is pending (tensors added meanwhile, by callbacks
  // too, included) and waits for it; throws the first failure.
  void synchronize();
  Comm& comm() { return comm_; }

 private:
  enum class Reason { kFull, kCycle, kFlush };
  struct Pending {
    uint64_t key;
    Request req;
    Callback cb;
    void* userData;
    std::shared_ptr<FusionCompletion> done;
  };
  void loop();
  // Throws why add() refuses `key`: the context failed, or the key is in flight.
  [[noreturn, gnu::cold, gnu::noinline]] void refuseAdd(uint64_t key);
  // The thread's timed wait (loop): adds meanwhile need not wake it.
  void waitClocked(std::unique_lock<std::mutex>& lock, std::chrono::steady_clock::time_point until);
  // Takes what is pending and runs one round on this thread (runRound);
  // called with `lock` held, returns with it held.
  void runOneRound(std::unique_lock<std::mutex>& lock, Reason reason);
  // One negotiation round and the fused all-reduces it agrees on; leaves in
  // `snapshot` only what must wait for a later round (put back by the caller).
  void runRound(std::vector<Pending>& snapshot, Reason reason);
  void finish(Pending& p, strataResult_t r, const std::string& error);
  // Frees the tensors' keys (under one lock), then calls their callbacks and completes their handles.
  void finishAll(const std::vector<Pending*>& done, strataResult_t r, const std::string& error);

  Comm& comm_;
  const size_t threshold_;
  const std::chrono::microseconds cycle_;
  std::mutex mu_;
  std::condition_variable wake_;    // the thread: something to do
  std::condition_variable settled_; // synchronize(): pending emptied or failure
  std::vector<Pending> pending_;    // in the order they were added
  // The context thread's working vectors, kept across rounds: a step's
  // thousand tensors would otherwise allocate (and, past glibc's mmap
  // threshold, map and fault in) them anew every round.
  std::vector<Pending> snapshot_;   // the round's tensors (swapped with pending_)
  std::vector<PendingKey> keys_;
  std::vector<const Request*> ready_;
  std::vector<const Request*> members_;  // a bucket's requests, keys and tensors
  std::vector<uint64_t> bucketKeys_;
  std::vector<Pending*> finished_;
  std::vector<uint8_t> handled_;         // per tensor of the round: completed (bool as bytes: no bit ops)
  KeySet liveKeys_;  // keys added and not completed yet (add() refuses them)
  size_t pendingBytes_ = 0;
  std::chrono::steady_clock::time_point deadline_;
  bool flushAsked_ = false, stop_ = false, addedSinceRound_ = false;
  bool addedSinceWait_ = false;     // tensors added since the thread last went to wait
  bool clockedWait_ = false;        // the thread waits with a time-out (waitClocked)
  size_t inRound_ = 0;              // tensors taken by the running round
  bool roundRunning_ = false;       // a round runs, on the context's thread or a synchronize()'s
  size_t liveCallbacks_ = 0;        // tensors with a callback, added and not completed
  int synchronizing_ = 0;           // callers waiting in synchronize()
  strataResult_t failCode_ = strataSuccess;
  std::string failMessage_;
  std::thread thread_;
};

}  // namespace strata
