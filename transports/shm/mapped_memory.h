// Host memory the other ranks of this host can map (strataMemAlloc): zero
// copy over shared memory. A region is POSIX shared memory named after the
// process and a serial number, mapped here when allocated. A large send from
// inside a region is lent by name and offset (a slot flagged
// kMappedRegion); the reader maps the region read-only the first time (and
// keeps the mapping), then copies or reduces straight from it: one user-space
// pass over the bytes, where the ring copies twice and the kernel's
// process_vm_readv (single_copy.h) is slower than that on some hosts.
//
// The name stays until strataMemFree (or the process's normal exit): a peer
// may map a region at any later collective. A process killed while holding
// regions leaves their names in /dev/shm (strata-mem-PID-*).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace strata {

// Where lent bytes lie: region `serial` of process `pid` (`regionBytes`
// long), `bytes` from `offset` on. Also a lent slot's payload.
struct MappedRef {
  uint64_t pid = 0;
  uint64_t serial = 0;
  uint64_t regionBytes = 0;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

// strataMemAlloc / strataMemFree. Throw strata errors naming the problem.
void* allocateMapped(size_t bytes);
void freeMapped(void* ptr);
// Whether [p, p + n) lies inside one region of this process; fills `ref`.
bool findMapped(const void* p, size_t n, MappedRef* ref);

// One peer's regions as this process maps them (read-only, kept until
// destruction; the least recently mapped go once more than kKept regions or
// kKeptBytes are mapped: a freed region's pages live while a peer maps it).
class PeerRegions {
 public:
  PeerRegions() = default;
  PeerRegions(const PeerRegions&) = delete;
  PeerRegions& operator=(const PeerRegions&) = delete;
  ~PeerRegions();
  // The first byte `ref` names, mapping its region if needed. `peer`, `pid`:
  // the rank and process the ref came from (a ref naming another process,
  // or bytes outside its region, is strataRemoteError).
  const uint8_t* at(const MappedRef& ref, int peer, pid_t pid);

 private:
  static constexpr size_t kKept = 64;
  static constexpr size_t kKeptBytes = size_t(1) << 30;
  struct Mapping {
    uint64_t serial;
    const uint8_t* base;
    size_t bytes;
  };
  std::vector<Mapping> mappings_;  // most recently mapped last
};

}  // namespace strata
