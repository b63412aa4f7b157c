// extern "C" strataMemAlloc / strataMemFree: host memory the ranks of a host
// can map (transports/shm/mapped_memory.h).
#include "api/entry.h"
#include "transports/shm/mapped_memory.h"

using namespace strata;

extern "C" {

strataResult_t strataMemAlloc(void** ptr, size_t size) {
  Comm* none = nullptr;
  return guarded("strataMemAlloc", none, [&] {
    if (!ptr) fail(strataInvalidArgument, "strataMemAlloc: ptr is NULL");
    *ptr = nullptr;
    *ptr = allocateMapped(size);
  });
}

strataResult_t strataMemFree(void* ptr) {
  Comm* none = nullptr;
  return guarded("strataMemFree", none, [&] { freeMapped(ptr); });
}

}  // extern "C"
