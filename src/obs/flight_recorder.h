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
  // The whole record of a finished collective at once (a repeated tiny
  // call's, Observer::endRepeated): the facts publishStart takes from an
  // OpFacts, given one by one.
  void publishDone(uint64_t id, const OpDesc& desc, const char* algorithm, uint64_t bytes, uint64_t startTick,
                   uint64_t endTick, int64_t waitUs);
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
  // Writer only: the slot of the next operation.
  Slot& nextSlot() {
    newest_ = newest_ + 1 == capacity_ ? 0 : newest_ + 1;  // ids are published in order
    return slots_[newest_];
  }
  struct Note {
    uint64_t id = 0;
    std::string text;
  };
  size_t capacity_;
  std::unique_ptr<Slot[]> slots_;  // operation id lives in slots_[(id - 1) % capacity_]
  uint64_t next_ = 1;              // writer only
  size_t newest_;                  // writer only: the slot of the newest operation
  mutable std::mutex notesMu_;
  std::vector<Note> notes_;  // per slot
};

}  // namespace strata
