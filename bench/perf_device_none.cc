#include "perf_device.h"

namespace perfdev {

bool ready(int, std::string* why) {
  *why = "this strata-perf was built without CUDA (nvcc was not found at configure time)";
  return false;
}
void* allocate(size_t) { return nullptr; }
void release(void*) {}
void upload(void*, const void*, size_t) {}
void download(void*, const void*, size_t) {}
void* stream() { return nullptr; }
void synchronize() {}

}  // namespace perfdev
