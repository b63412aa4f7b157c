#include "kernels/cuda/emulated/emulated_device.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <map>
#include <string>

namespace strata::cuda::emulated {

uint64_t Progress::enqueued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return enqueued_;
}

bool Progress::reached(uint64_t position) const {
  std::lock_guard<std::mutex> lock(mu_);
  return completed_ >= position;
}

void Progress::waitFor(uint64_t position) const {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return completed_ >= position; });
}

Stream::Stream() : progress_(std::make_shared<Progress>()), worker_([this] { run(); }) {}

Stream::~Stream() {
  {
    std::lock_guard<std::mutex> lock(progress_->mu_);
    progress_->stop_ = true;
  }
  progress_->cv_.notify_all();
  worker_.join();
}

uint64_t Stream::enqueue(std::function<void()> work) {
  Progress& p = *progress_;
  uint64_t position;
  {
    std::lock_guard<std::mutex> lock(p.mu_);
    p.work_.push_back(std::move(work));
    position = ++p.enqueued_;
  }
  p.cv_.notify_all();
  return position;
}

void Stream::run() {
  Progress& p = *progress_;
  std::unique_lock<std::mutex> lock(p.mu_);
  while (true) {
    p.cv_.wait(lock, [&] { return p.stop_ || !p.work_.empty(); });
    if (p.work_.empty()) return;  // stopping, nothing left
    std::function<void()> work = std::move(p.work_.front());
    p.work_.pop_front();
    lock.unlock();
    work();
    lock.lock();
    ++p.completed_;
    p.cv_.notify_all();
  }
}

Stream& streamOf(void* handle) {
  if (handle) return *static_cast<Stream*>(handle);
  static Stream* legacy = new Stream;  // lives as long as the process (its thread too)
  return *legacy;
}

namespace {

constexpr uint64_t kExportMagic = 0x454d554c41544544ull;  // "EMULATED"

struct Allocation {
  size_t bytes;
  int fd;       // ours, or -1 for a peer's mapping
};

std::mutex& registryLock() {
  static std::mutex mu;
  return mu;
}
std::map<uintptr_t, Allocation>& registry() {
  static std::map<uintptr_t, Allocation> all;
  return all;
}

}  // namespace

void* allocate(size_t bytes) {
  int fd = memfd_create("strata-emulated-device", MFD_CLOEXEC);
  if (fd < 0) return nullptr;
  bytes = bytes ? bytes : 1;
  void* p = ftruncate(fd, off_t(bytes)) == 0 ? mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                                            : MAP_FAILED;
  if (p == MAP_FAILED) {
    close(fd);
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(registryLock());
  registry()[reinterpret_cast<uintptr_t>(p)] = Allocation{bytes, fd};
  return p;
}

void unmap(void* base) {
  Allocation a;
  {
    std::lock_guard<std::mutex> lock(registryLock());
    auto it = registry().find(reinterpret_cast<uintptr_t>(base));
    if (it == registry().end()) return;
    a = it->second;
    registry().erase(it);
  }
  munmap(base, a.bytes);
  if (a.fd >= 0) close(a.fd);
}

bool isDevice(const void* ptr) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(registryLock());
  auto it = registry().upper_bound(p);
  if (it == registry().begin()) return false;
  --it;
  return p < it->first + it->second.bytes;
}

bool exportOf(const void* base, Export* out) {
  std::lock_guard<std::mutex> lock(registryLock());
  auto it = registry().find(reinterpret_cast<uintptr_t>(base));
  if (it == registry().end() || it->second.fd < 0) return false;
  *out = Export{kExportMagic, int64_t(getpid()), int64_t(it->second.fd), uint64_t(it->second.bytes)};
  return true;
}

void* mapExport(const Export& e) {
  if (e.magic != kExportMagic || e.pid == getpid()) return nullptr;  // CUDA refuses its own handles too
  const std::string path = "/proc/" + std::to_string(e.pid) + "/fd/" + std::to_string(e.fd);
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return nullptr;
  void* p = mmap(nullptr, size_t(e.bytes), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return nullptr;
  std::lock_guard<std::mutex> lock(registryLock());
  registry()[reinterpret_cast<uintptr_t>(p)] = Allocation{size_t(e.bytes), -1};
  return p;
}

}  // namespace strata::cuda::emulated
