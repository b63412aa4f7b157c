#include "core/memory.h"

#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include <time.h>

#ifdef STRATA_CUDA_EMULATED
#include "kernels/cuda/emulated/emulated_device.h"
#endif

namespace strata {

namespace {

// The CUDA driver's cuPointerGetAttribute. The driver library is loaded by
// every process that uses CUDA, whether its runtime is linked statically
// (as libstrata's own, NCCL's) or dynamically (PyTorch's), so it is asked
// first. Constants from cuda.h.
using DriverGetAttributeFn = int (*)(void* data, int attribute, uintptr_t ptr);
constexpr int kCuPointerAttributeMemoryType = 2;
constexpr int kCuPointerAttributeIsManaged = 8;
constexpr unsigned kCuMemoryTypeDevice = 2;

// The leading fields of the runtime's cudaPointerAttributes (CUDA >= 10).
struct CudaPointerAttributes {
  int type;  // 0 unregistered, 1 host, 2 device, 3 managed
  int device;
  void* devicePointer;
  void* hostPointer;
};
using RuntimeGetAttributesFn = int (*)(CudaPointerAttributes*, const void*);

void* loadedSymbol(const char* const* libraries, int n, const char* symbol) {
  for (int i = 0; i < n; ++i) {
    void* lib = dlopen(libraries[i], RTLD_LAZY | RTLD_NOLOAD);  // only if the process already uses CUDA
    if (!lib) continue;
    if (void* fn = dlsym(lib, symbol)) return fn;
  }
  return nullptr;
}

struct CudaQueries {
  DriverGetAttributeFn driver = nullptr;
  RuntimeGetAttributesFn runtime = nullptr;
};

CudaQueries findCuda() {
  static const char* drivers[] = {"libcuda.so.1", "libcuda.so"};
  static const char* runtimes[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"};
  CudaQueries q;
  q.driver = reinterpret_cast<DriverGetAttributeFn>(loadedSymbol(drivers, 2, "cuPointerGetAttribute"));
  q.runtime = reinterpret_cast<RuntimeGetAttributesFn>(loadedSymbol(runtimes, 4, "cudaPointerGetAttributes"));
  return q;
}

// The number of shared objects the process has loaded so far (glibc counts
// every load in dlpi_adds); reading it stops at the first object, so it is cheap.
unsigned long long librariesLoaded() {
  unsigned long long adds = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t size, void* out) {
        if (size >= offsetof(dl_phdr_info, dlpi_adds) + sizeof(info->dlpi_adds))
          *static_cast<unsigned long long*>(out) = info->dlpi_adds;
        return 1;
      },
      &adds);
  return adds;
}

// How often a process without CUDA counts its libraries again. Counting takes
// the dynamic loader's lock, two locked instructions that cost ~10% of a
// small host collective over shared memory when paid on every call. Once a
// millisecond is still soon enough: a device pointer cannot exist earlier
// than that after CUDA's library is loaded, since initialising the driver and
// creating a context (which every allocation needs) take tens of
// milliseconds on their own. The time is the kernel's coarse clock (a read
// of the vDSO's page, no time-stamp counter), whose 1-4 ms ticks keep to that.
constexpr uint64_t kLookAgainNs = 1000000;

uint64_t coarseNowNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}

// Set once CUDA's queries were found (cudaQueries), never cleared.
std::atomic<bool> cudaFound{false};
CudaQueries foundQueries;  // written once, before cudaFound is set
constexpr CudaQueries kNoQueries;
// When the queries may be looked for again (coarseNowNs), and how many
// libraries the process had loaded at the last look.
std::atomic<uint64_t> nextLookNs{0};
std::atomic<unsigned long long> loadedAtLastLook{~0ull};
std::mutex lookMutex;

// cudaQueries' look, due at `now`: kept out of line, so that the calls that
// need no look (all but one a tick) save and restore no registers for it.
[[gnu::noinline]] const CudaQueries& lookForCuda(uint64_t now) {
  nextLookNs.store(now + kLookAgainNs, std::memory_order_relaxed);
  const unsigned long long loaded = librariesLoaded();
  if (loaded == loadedAtLastLook.load(std::memory_order_relaxed)) return kNoQueries;
  std::lock_guard<std::mutex> lock(lookMutex);
  if (cudaFound.load(std::memory_order_relaxed)) return foundQueries;
  loadedAtLastLook.store(loaded, std::memory_order_relaxed);
  CudaQueries q = findCuda();
  if (!q.driver && !q.runtime) return kNoQueries;
  foundQueries = q;
  cudaFound.store(true, std::memory_order_release);
  return foundQueries;
}

// The queries, looked up again while CUDA is absent whenever the process has
// loaded another library since the last look, so that a process that loads
// CUDA after its first host collective still has its device pointers
// recognised, and one that never does pays no lookup per call.
inline const CudaQueries& cudaQueries() {
  if (cudaFound.load(std::memory_order_acquire)) return foundQueries;
  const uint64_t now = coarseNowNs();
  if (now < nextLookNs.load(std::memory_order_relaxed)) return kNoQueries;
  return lookForCuda(now);
}

}  // namespace

bool deviceMemoryPossible() {
#ifdef STRATA_CUDA_EMULATED
  return true;
#else
  const CudaQueries& cuda = cudaQueries();
  return cuda.driver || cuda.runtime;
#endif
}

bool deviceMemoryFound() {
#ifdef STRATA_CUDA_EMULATED
  return true;
#else
  return cudaFound.load(std::memory_order_relaxed);
#endif
}

MemoryKind memoryKindOf(const void* ptr) {
  if (!ptr) return MemoryKind::kHost;
#ifdef STRATA_CUDA_EMULATED
  if (cuda::emulated::isDevice(ptr)) return MemoryKind::kDevice;
#endif
  const CudaQueries& cuda = cudaQueries();
  if (!cuda.driver && !cuda.runtime) return MemoryKind::kHost;
  if (cuda.driver) {
    unsigned type = 0;
    int managed = 0;
    // Any failure (CUDA not initialised, a pointer CUDA does not know) means host memory.
    if (cuda.driver(&type, kCuPointerAttributeMemoryType, reinterpret_cast<uintptr_t>(ptr)) != 0)
      return MemoryKind::kHost;
    if (cuda.driver(&managed, kCuPointerAttributeIsManaged, reinterpret_cast<uintptr_t>(ptr)) == 0 && managed)
      return MemoryKind::kHost;  // managed memory is reachable from the host
    return type == kCuMemoryTypeDevice ? MemoryKind::kDevice : MemoryKind::kHost;
  }
  if (cuda.runtime) {
    CudaPointerAttributes attr{};
    if (cuda.runtime(&attr, ptr) != 0) return MemoryKind::kHost;  // unknown to CUDA: host memory
    return attr.type == 2 ? MemoryKind::kDevice : MemoryKind::kHost;
  }
  return MemoryKind::kHost;
}

}  // namespace strata
