// The flight recorder: the last N operations of one communicator (what, how
// big, which algorithm, state, timestamps, what a long wait is waiting for),
// kept in memory and written out on a timeout, an abort or SIGUSR1, so that
// a hung job says where each rank is.
//
// One writer (the thread running the communicator's operations) publishes
// each record through a sequence lock: no locked instruction per operation.
// Readers (dumps from any thread) copy consistent records. Notes are rare
// (a long wait, an error) and sit beside the records under a mutex.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "obs/op_record.h"
#include "obs/seq_lock.h"

namespace strata {

class FlightRecorder {
 public:
  explicit FlightRecorder(size_t capacity);
  bool enabled() const { return capacity_ != 0; }
  // Writer only: the next operation's id; publishing its facts when it
  // starts, and what changes when it ends (state, end time, wait).
  uint64_t nextId() { return next_++; }
  void publishStart(const OpFacts& facts);
  void publishEnd(const OpFacts& facts);
  // Writer only: a repeated tiny call, done (Observer::endRepeated; `key`
  // names its compiled plan, RepeatFacts::key). Where the newest record is a
  // run of repeats of the same call, with no record since, the call joins
  // it: the record's last seq, its count of calls and the times of its timed
  // calls change under the slot's lock, a few stores. Otherwise the call
  // opens a new record, a run of one. A loop of one tiny call then fills one
  // record, not the whole history, and costs little per call.
  void publishRepeat(uint64_t key, const OpDesc& desc, const char* algorithm, uint64_t bytes, uint64_t startTick,
                     uint64_t endTick, int64_t waitUs) {
    if (key == runKey_) joinRun(desc.seq, startTick, endTick, waitUs);
    else openRun(key, desc, algorithm, bytes, startTick, endTick, waitUs);
  }
  // Any thread: the note of operation `id` (kept while its record is).
  void setNote(uint64_t id, const std::string& note);
  // Any thread: the records, oldest first.
  std::vector<OpRecord> snapshot() const;

  // The text of a dump: a header line, `context` lines, then one line per
  // operation. `steadyToWallUs` converts steady-clock times to wall-clock.
  static std::string format(const std::string& header, const std::vector<std::string>& context,
                            const std::vector<OpRecord>& ops, int64_t steadyToWallUs,
                            int64_t nowSteadyUs);

 private:
  // One record in relaxed atomics, stored field by field (a field loaded
  // whole from the writer's copy forwards from the store that wrote it).
  struct Slot {
    SeqLock lock;
    std::atomic<uint64_t> id{0}, count{0}, seq{0}, bytes{0}, startTick{0}, endTick{0};
    std::atomic<uint64_t> repeats{1}, firstSeq{0};  // OpFacts: a run of repeats
    std::atomic<int64_t> waitUs{0};
    std::atomic<const char*> algorithm{""};
    std::atomic<Coll> coll{Coll::kAllReduce};
    std::atomic<strataDataType_t> dtype{strataFloat32};
    std::atomic<strataRedOp_t> redop{strataSum};
    std::atomic<int32_t> root{0};
    std::atomic<uint32_t> layout{0};
    std::atomic<uint16_t> fusedTensors{0};
    std::atomic<bool> p2p{false};
    std::atomic<OpState> state{OpState::kRunning};
    OpFacts load() const;
    // Writer only: every field, under the lock.
    void store(uint64_t id, const OpDesc& desc, bool p2p, const char* algorithm, uint64_t bytes,
               uint64_t startTick, OpState state, uint64_t endTick, int64_t waitUs);
  };
  // Writer only: the slot of the next operation (which ends any run of repeats).
  Slot& nextSlot() {
    newest_ = newest_ + 1 == capacity_ ? 0 : newest_ + 1;  // ids are published in order
    runKey_ = 0;
    return slots_[newest_];
  }
  // publishRepeat's two cases: one more call in the newest record, or a new record.
  void joinRun(uint64_t seq, uint64_t startTick, uint64_t endTick, int64_t waitUs) {
    constexpr auto relaxed = std::memory_order_relaxed;
    Slot& s = slots_[newest_];
    s.lock.beginWrite();
    s.seq.store(seq, relaxed);
    s.repeats.store(s.repeats.load(relaxed) + 1, relaxed);
    if (endTick) {
      if (!s.startTick.load(relaxed)) s.startTick.store(startTick, relaxed);
      s.endTick.store(endTick, relaxed);
    }
    if (waitUs) s.waitUs.store(s.waitUs.load(relaxed) + waitUs, relaxed);
    s.lock.endWrite();
  }
  void openRun(uint64_t key, const OpDesc& desc, const char* algorithm, uint64_t bytes, uint64_t startTick,
               uint64_t endTick, int64_t waitUs);
  struct Note {
    uint64_t id = 0;
    std::string text;
  };
  size_t capacity_;
  std::unique_ptr<Slot[]> slots_;  // operation id lives in slots_[(id - 1) % capacity_]
  uint64_t next_ = 1;              // writer only
  size_t newest_;                  // writer only: the slot of the newest operation
  uint64_t runKey_ = 0;            // writer only: the newest record's run of repeats (0: it is none)
  mutable std::mutex notesMu_;
  std::vector<Note> notes_;  // per slot
};

}  // namespace strata
