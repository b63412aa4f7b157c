// The layout of one shm inbox segment: a header then `slots` slots of
// `slotBytes` each. The writer fills slot (produced % slots), stores its
// length, then publishes with a release store of produced+1; the reader
// acquires produced, reads, and releases with consumed+1.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace strata {

constexpr int kMaxShmSlots = 64;

struct ShmRingHeader {
  alignas(64) std::atomic<uint64_t> produced;
  alignas(64) std::atomic<uint64_t> consumed;
  alignas(64) uint64_t slotBytes;
  uint32_t slots;
  uint32_t lengths[kMaxShmSlots];
};

constexpr size_t kShmHeaderBytes = (sizeof(ShmRingHeader) + 4095) & ~size_t(4095);

// A mapped inbox segment (ours or the peer's). Unmaps on destruction.
class ShmSegment {
 public:
  ShmSegment() = default;
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;
  ~ShmSegment();
  // Creates and maps a new segment under `name`.
  void create(const char* name, size_t slotBytes, int slots);
  // Maps the peer's existing segment.
  void open(const char* name);
  ShmRingHeader* header() const { return static_cast<ShmRingHeader*>(base_); }
  uint8_t* slot(uint64_t index) const {
    return static_cast<uint8_t*>(base_) + kShmHeaderBytes + (index % header()->slots) * header()->slotBytes;
  }

 private:
  void* base_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace strata
