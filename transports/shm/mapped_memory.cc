#include "transports/shm/mapped_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>

#include "core/error.h"
#include "core/log.h"

namespace strata {

namespace {

std::string regionName(uint64_t pid, uint64_t serial) {
  return format("/strata-mem-%llu-%llu", (unsigned long long)pid, (unsigned long long)serial);
}

// A region this process mapped at strataMemAlloc. `owner`: the process that
// made it (whose pid its name carries): a child forked after the allocation
// inherits the mapping (shared with its parent) but not the name, so it
// neither lends the region by name nor removes the name.
struct Region {
  uint64_t serial;
  size_t bytes;
  pid_t owner;
};

// This process's regions by start address.
struct Regions {
  std::mutex mu;
  std::map<uintptr_t, Region> byStart;
  uint64_t nextSerial = 1;
};

void unlinkAllAtExit();

Regions& regions() {
  static Regions* r = [] {
    std::atexit(unlinkAllAtExit);  // names only: the memory goes with the process
    return new Regions();          // outlives static destructors
  }();
  return *r;
}

void unlinkAllAtExit() {
  Regions& r = regions();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const auto& [start, region] : r.byStart)
    if (region.owner == getpid()) shm_unlink(regionName(uint64_t(region.owner), region.serial).c_str());
}

}  // namespace

void* allocateMapped(size_t bytes) {
  if (bytes == 0) fail(strataInvalidArgument, "strataMemAlloc: size is 0");
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  if (bytes > (size_t(1) << 46)) fail(strataInvalidArgument, "strataMemAlloc: %zu bytes is more than any host has", bytes);
  const size_t rounded = (bytes + page - 1) / page * page;
  Regions& r = regions();
  uint64_t serial;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    serial = r.nextSerial++;
  }
  const std::string name = regionName(uint64_t(getpid()), serial);
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) fail(strataSystemError, "strataMemAlloc: shm_open(%s) failed: %s", name.c_str(), std::strerror(errno));
  if (ftruncate(fd, off_t(rounded)) != 0) {
    int e = errno;
    ::close(fd);
    shm_unlink(name.c_str());
    fail(strataSystemError, "strataMemAlloc: cannot size shared memory to %zu bytes: %s", rounded, std::strerror(e));
  }
  // Pages allocated now: where /dev/shm cannot hold them the call fails here,
  // not the first store to a page it cannot back (SIGBUS).
  if (int e = posix_fallocate(fd, 0, off_t(rounded)); e != 0) {
    ::close(fd);
    shm_unlink(name.c_str());
    fail(strataSystemError, "strataMemAlloc: cannot allocate %zu bytes in /dev/shm: %s (enlarge /dev/shm, "
         "e.g. docker run --shm-size, or allocate less)", rounded, std::strerror(e));
  }
  void* p = mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) {
    int e = errno;
    shm_unlink(name.c_str());
    fail(strataSystemError, "strataMemAlloc: cannot map %zu bytes of shared memory: %s", rounded, std::strerror(e));
  }
  std::lock_guard<std::mutex> lock(r.mu);
  r.byStart[reinterpret_cast<uintptr_t>(p)] = Region{serial, rounded, getpid()};
  return p;
}

void freeMapped(void* ptr) {
  if (!ptr) return;  // as free(NULL)
  Regions& r = regions();
  Region region;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.byStart.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == r.byStart.end())
      fail(strataInvalidArgument, "strataMemFree: %p was not returned by strataMemAlloc (or was freed already)", ptr);
    region = it->second;
    r.byStart.erase(it);
  }
  if (region.owner == getpid()) shm_unlink(regionName(uint64_t(region.owner), region.serial).c_str());
  munmap(ptr, region.bytes);
}

bool findMapped(const void* p, size_t n, MappedRef* ref) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  Regions& r = regions();
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.byStart.empty()) return false;
  auto it = r.byStart.upper_bound(at);
  if (it == r.byStart.begin()) return false;
  --it;
  const uintptr_t start = it->first;
  const Region& region = it->second;
  if (at - start >= region.bytes || n > region.bytes - (at - start)) return false;
  if (region.owner != getpid()) return false;  // inherited across a fork: sent as any memory
  *ref = MappedRef{uint64_t(getpid()), region.serial, region.bytes, uint64_t(at - start), n};
  return true;
}

PeerRegions::~PeerRegions() {
  for (const Mapping& m : mappings_) munmap(const_cast<uint8_t*>(m.base), m.bytes);
}

const uint8_t* PeerRegions::at(const MappedRef& ref, int peer, pid_t pid) {
  if (ref.pid != uint64_t(pid) || ref.offset > ref.regionBytes || ref.bytes > ref.regionBytes - ref.offset)
    fail(strataRemoteError, "rank %d lent bytes outside a region of its own (process %llu, bytes %llu-%llu of %llu)",
         peer, (unsigned long long)ref.pid, (unsigned long long)ref.offset,
         (unsigned long long)(ref.offset + ref.bytes), (unsigned long long)ref.regionBytes);
  for (const Mapping& m : mappings_)
    if (m.serial == ref.serial && ref.regionBytes <= m.bytes) return m.base + ref.offset;
  const std::string name = regionName(ref.pid, ref.serial);
  int fd = shm_open(name.c_str(), O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0)
    fail(strataRemoteError, "cannot map rank %d's strataMemAlloc memory %s: %s", peer, name.c_str(), std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || uint64_t(st.st_size) < ref.regionBytes) {
    ::close(fd);
    fail(strataRemoteError, "rank %d's strataMemAlloc memory %s is smaller than it says", peer, name.c_str());
  }
  void* p = mmap(nullptr, size_t(ref.regionBytes), PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED)
    fail(strataRemoteError, "cannot map rank %d's strataMemAlloc memory %s: %s", peer, name.c_str(), std::strerror(errno));
  size_t kept = size_t(ref.regionBytes);
  for (const Mapping& m : mappings_) kept += m.bytes;
  while (!mappings_.empty() && (mappings_.size() >= kKept || kept > kKeptBytes)) {
    kept -= mappings_.front().bytes;
    munmap(const_cast<uint8_t*>(mappings_.front().base), mappings_.front().bytes);
    mappings_.erase(mappings_.begin());
  }
  mappings_.push_back(Mapping{ref.serial, static_cast<const uint8_t*>(p), size_t(ref.regionBytes)});
  STRATA_INFO("shm: reading rank %d's strataMemAlloc memory %s (%llu bytes) in place", peer, name.c_str(),
              (unsigned long long)ref.regionBytes);
  return mappings_.back().base + ref.offset;
}

}  // namespace strata
