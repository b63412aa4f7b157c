// The layout of one shm inbox segment: a header, then `slots` slots of
// `slotStride` bytes. Each slot starts with a 16-byte slot header whose first
// 8 bytes are the word, (packet number + 1) << 32 | flags | length. A packet
// of up to kShmCompactBytes (a tiny call's: a 24-byte operation descriptor and
// up to 32 bytes of values) is compact: its bytes start right after the word,
// so the whole packet is the one cache line the reader polls. A longer
// packet's bytes start after the 16-byte header, where they always did: its
// copies and reductions keep that alignment (8 bytes past a line measured
// 1.5-1.9x slower at 256 KiB-1 MiB, 53b6df5). The length alone says which.
// The writer fills the packet, then publishes the word with a release store;
// the reader acquires the word of the slot it expects next, reads, and
// releases slots by storing its count of packets consumed in the segment
// header (a few packets at a time while it goes on reading, all of them when
// it waits), which the writer reads only when the ring looks full.
//
// A slot may instead hold a lent region (single copy, single_copy.h): the
// word's kLentRegion bit is set and the payload is a ShmLentRegion, where the
// bytes lie in the writer's memory. The reader reads them from there and
// releases the slot when it has read them all, which is what gives the
// writer its buffer back. With the kMappedRegion bit the bytes lie in
// strataMemAlloc memory and the payload is a MappedRef (mapped_memory.h): the
// reader maps the region and reads them in place.
//
// A large packet's bytes are stored cached or streaming (store_mode.h): the
// writer notes which, and its copy time, in the slot header's second half;
// the reader says which it prefers in the segment header.
//
// After the slots lies the small lane: kShmSmallSlots slots of
// kShmSmallSlotBytes, for packets that fit one (every tiny call's). Packets
// are numbered across both: packet k lies in slot k % slots or in small slot
// k % kShmSmallSlots, whichever the writer chose, and the reader looks for
// its number in both words. A writer may run kShmSmallSlots packets ahead of
// the reader in small slots and `slots` in the others. So a stream of tiny
// calls keeps 64 packets in flight rather than 8: where the lines crossing
// between the two cores are dear (the VM's slow state: a line's round trip
// 4x as long), the 8-deep ring held such a stream to the trips of its
// slots' lines and their releases (measured, 2 ranks: an 8-byte reduce
// 0.12 us a call where 64 slots take 0.085).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace strata {

constexpr int kMaxShmSlots = 64;
constexpr size_t kShmSlotHeaderBytes = 16;
// The small lane (above): its slots, and the most each holds (the tiny path's
// largest packet, kTinyPacketBytes in exec/tiny_run.h).
constexpr int kShmSmallSlots = 64;
constexpr size_t kShmSmallSlotBytes = 4096;
constexpr size_t kShmCompactOffset = 8;                     // a compact packet's bytes: after the word
constexpr size_t kShmCompactBytes = 64 - kShmCompactOffset;  // the most a compact packet holds

// A shared read of one lent region (single_copy.h: sharedAgainstOneCopy),
// in the header of the reader's inbox. The reader, about to read a lent
// region whose word has kShareable into its destination, writes where that
// lies (dst) and the packet's number, then publishes `cursor`: the packet's
// low 16 bits << 48 | next chunk from the front << 24 | end of the chunks
// not yet taken (each kSharedChunkBytes of the region). It takes chunks from
// the front, the writer (while it waits) from the back, each by one CAS on
// the cursor, so every chunk is copied once: the reader's with
// process_vm_readv, the writer's with process_vm_writev straight into dst.
// The writer counts each chunk it wrote in `written` (and sets `broken` if
// it could not write one); the reader releases the slot only once every
// chunk the writer took is counted, re-reading all of them itself if one broke.
struct ShmSharedRead {
  alignas(64) std::atomic<uint64_t> cursor;
  std::atomic<uint64_t> packet;  // its number (full), written before the cursor
  std::atomic<uint64_t> dst;     // the region's first byte in the reader
  alignas(64) std::atomic<uint64_t> written;
  std::atomic<uint32_t> broken;
};
constexpr size_t kSharedChunkBytes = 128 * 1024;
constexpr uint64_t kSharedChunkMask = (uint64_t(1) << 24) - 1;
inline uint64_t sharedTag(uint64_t packet) { return packet & 0xffff; }
inline uint64_t sharedCursor(uint64_t packet, uint64_t front, uint64_t end) {
  return sharedTag(packet) << 48 | front << 24 | end;
}
inline uint64_t sharedFront(uint64_t cursor) { return cursor >> 24 & kSharedChunkMask; }
inline uint64_t sharedEnd(uint64_t cursor) { return cursor & kSharedChunkMask; }

struct ShmRingHeader {
  alignas(64) std::atomic<uint64_t> consumed;  // packets the reader has released
  alignas(64) uint64_t slotBytes;              // payload capacity of a slot
  uint32_t slots;
  // Set by the reader (the segment's owner) once it has read the writer's
  // memory at set-up: the writer may then lend regions.
  alignas(64) std::atomic<uint32_t> readerReadsWriterMemory;
  // Set by the reader: the writer should store large packets streaming
  // (store_mode.h); the reader changes it when its measurements say so.
  alignas(64) std::atomic<uint32_t> writerShouldStream;
  ShmSharedRead sharedRead;
};

// A lent region's slot payload: the bytes' address in the writer and length.
struct ShmLentRegion {
  uint64_t address;
  uint64_t bytes;
};
constexpr uint64_t kLentRegion = uint64_t(1) << 31;    // in the slot word's length half
constexpr uint64_t kMappedRegion = uint64_t(1) << 30;  // likewise
// Set by a writer running ahead of the reader: when it last found its ring
// full, at least half of it was still unread. The packets after this one are
// then likely written already, so the reader fetches the next one's lines
// as soon as it is done with this one (shm_transport.cc: consumeRecv).
constexpr uint64_t kWriterAhead = uint64_t(1) << 29;
// With kLentRegion: the writer will help read it (ShmSharedRead).
constexpr uint64_t kShareable = uint64_t(1) << 28;
constexpr uint64_t kSlotLengthMask = kShareable - 1;

struct ShmSlotHeader {
  std::atomic<uint64_t> word;  // (packet number + 1) << 32 | length; 0 before the first use
  // A large packet the writer timed (store_mode.h): its number + 1 (low 32
  // bits; any other value: not timed), and the writer's copy time in ns with
  // kStreamedPacket set if it was stored streaming and kFirstOfItsWay if the
  // writer's previous large packet was stored the other way. Written before the word.
  // A compact packet's bytes lie here instead (compact packets are never timed).
  uint32_t timedPacket;
  uint32_t writerNanos;
};
constexpr uint32_t kStreamedPacket = uint32_t(1) << 31;
constexpr uint32_t kFirstOfItsWay = uint32_t(1) << 30;
constexpr uint32_t kWriterNanosMask = kFirstOfItsWay - 1;

constexpr size_t kShmHeaderBytes = (sizeof(ShmRingHeader) + 4095) & ~size_t(4095);

inline size_t shmSlotStride(size_t slotBytes) { return (kShmSlotHeaderBytes + slotBytes + 63) & ~size_t(63); }
constexpr size_t kShmSmallStride = (kShmSlotHeaderBytes + kShmSmallSlotBytes + 63) & ~size_t(63);
constexpr size_t kShmSmallLaneBytes = kShmSmallStride * kShmSmallSlots;
// `bytes` < 2^28; `flags` 0, kLentRegion (| kShareable) or kMappedRegion, and kWriterAhead.
inline uint64_t shmSlotWord(uint64_t packet, size_t bytes, uint64_t flags = 0) {
  return ((packet + 1) << 32) | uint64_t(uint32_t(bytes)) | flags;
}

// Asks for the cache lines of [p, p + bytes) with intent to write (x86
// PREFETCHW; a no-op where the CPU lacks it), without waiting: a writer that
// takes a slot's lines back from the reader this way before it fills them
// does not stall its later stores on the transfer.
inline void prefetchForWrite(const void* p, size_t bytes) {
  const char* line = static_cast<const char*>(p);
  for (const char* end = line + bytes; line < end; line += 64) {
#if defined(__x86_64__)
    asm volatile("prefetchw %0" ::"m"(*line));
#else
    __builtin_prefetch(line, 1);
#endif
  }
}

// Asks for the cache lines of [p, p + bytes) for reading, without waiting.
inline void prefetchForRead(const void* p, size_t bytes) {
  const char* line = static_cast<const char*>(p);
  for (const char* end = line + bytes; line < end; line += 64) __builtin_prefetch(line);
}

// A mapped inbox segment (ours or the peer's). Unmaps on destruction. The
// geometry is read once when mapped (a peer cannot change it later).
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
  const void* base() const { return base_; }
  uint32_t slots() const { return slots_; }
  size_t slotBytes() const { return slotBytes_; }
  // The header of the slot packet `packet` takes in the slots or (`small`)
  // in the small lane.
  ShmSlotHeader* slotHeader(uint64_t packet, bool small = false) const {
    if (small) return reinterpret_cast<ShmSlotHeader*>(smallLane_ + (packet % kShmSmallSlots) * kShmSmallStride);
    return reinterpret_cast<ShmSlotHeader*>(static_cast<uint8_t*>(base_) + kShmHeaderBytes +
                                            (packet % slots_) * stride_);
  }
  // Where packet `packet`'s bytes start: after the word if it is compact
  // (kShmCompactBytes or fewer), else after the slot header. Lent and
  // mapped regions' descriptions are never compact, nor in the small lane.
  uint8_t* payload(uint64_t packet, bool compact = false, bool small = false) const {
    return reinterpret_cast<uint8_t*>(slotHeader(packet, small)) + (compact ? kShmCompactOffset : kShmSlotHeaderBytes);
  }
  // The number of slots a writer may fill ahead of the reader in a lane.
  uint32_t window(bool small) const { return small ? uint32_t(kShmSmallSlots) : slots_; }

 private:
  void adoptGeometry(uint32_t slots, size_t slotBytes) {
    slots_ = slots;
    slotBytes_ = slotBytes;
    stride_ = shmSlotStride(slotBytes);
    smallLane_ = static_cast<uint8_t*>(base_) + kShmHeaderBytes + stride_ * slots;
  }
  // The bytes a segment of this geometry maps.
  static size_t bytesFor(size_t slotBytes, uint32_t slots) {
    return kShmHeaderBytes + shmSlotStride(slotBytes) * slots + kShmSmallLaneBytes;
  }
  void* base_ = nullptr;
  uint8_t* smallLane_ = nullptr;  // the small lane's first slot
  size_t bytes_ = 0;
  uint32_t slots_ = 0;
  size_t slotBytes_ = 0, stride_ = 0;
};

}  // namespace strata
