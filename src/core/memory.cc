#include "core/memory.h"

#include <dlfcn.h>

namespace strata {

namespace {

// The leading fields of cudaPointerAttributes (CUDA >= 10), enough to read the type.
struct CudaPointerAttributes {
  int type;  // 0 unregistered, 1 host, 2 device, 3 managed
  int device;
  void* devicePointer;
  void* hostPointer;
};
using GetAttributesFn = int (*)(CudaPointerAttributes*, const void*);

GetAttributesFn findCudaRuntime() {
  static const char* names[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"};
  for (const char* name : names) {
    void* lib = dlopen(name, RTLD_LAZY | RTLD_NOLOAD);  // only if the process already uses CUDA
    if (!lib) continue;
    auto fn = reinterpret_cast<GetAttributesFn>(dlsym(lib, "cudaPointerGetAttributes"));
    if (fn) return fn;
  }
  return nullptr;
}

}  // namespace

MemoryKind memoryKindOf(const void* ptr) {
  static const GetAttributesFn getAttributes = findCudaRuntime();
  if (!getAttributes || !ptr) return MemoryKind::kHost;
  CudaPointerAttributes attr{};
  if (getAttributes(&attr, ptr) != 0) return MemoryKind::kHost;  // unknown to CUDA: host memory
  return attr.type == 2 ? MemoryKind::kDevice : MemoryKind::kHost;
}

}  // namespace strata
