#include "support/multi_copy_cases.h"

#include <cstring>
#include <random>

#include "kernels/cuda/host_bodies.h"

namespace strata::test {

std::vector<MultiCopyCase> multiCopyCases(bool large) {
  std::vector<MultiCopyCase> cases;
  cases.push_back({"1000 tensors of 4 KiB", std::vector<uint64_t>(1000, 4096), true, 0, false});
  const std::vector<uint64_t> odd = {0, 1, 3, 4095, 4096, 7, 65536, 65537, 0, 200003, 16, 17, 0};
  for (bool pack : {true, false})
    for (uint64_t offset : {uint64_t(0), uint64_t(5)})
      for (bool shift : {false, true})
        cases.push_back({std::string(pack ? "pack" : "unpack") + " odd sizes, contiguous +" + std::to_string(offset) +
                             (shift ? ", tensors shifted" : ""),
                         odd, pack, offset, shift});
  std::mt19937_64 rng(42);
  std::vector<uint64_t> mixed;
  for (int i = 0; i < 50; ++i) mixed.push_back(rng() % 300000);
  cases.push_back({"unpack 50 random sizes", mixed, false, 3, true});
  cases.push_back({"nothing", {}, true, 0, false});
  if (large) {  // 200 tensors of mixed sizes totalling about 100 MiB, as issue 7's benchmark
    std::vector<uint64_t> big;
    for (int i = 0; i < 200; ++i) big.push_back(4 * (1 + rng() % (2 * 131072)));
    cases.push_back({"pack 200 tensors of mixed sizes (~100 MiB)", big, true, 0, false});
    cases.push_back({"unpack 200 tensors of mixed sizes (~100 MiB)", big, false, 0, false});
  }
  return cases;
}

void runMultiCopyOnCpu(const std::vector<cuda::CopySegment>& table, uint64_t chunks, uint64_t blocks,
                       uint64_t threads) {
  cuda::multiCopyOnHost(table.data(), int(table.size()), chunks, blocks, threads);
}

uint64_t MultiCopyBuffers::contiguousStart(int tensor) const {
  uint64_t at = 0;
  for (int i = 0; i < tensor; ++i) at += case_.sizes[i];
  return at;
}

size_t MultiCopyBuffers::offsetOf(int buffer) const {
  if (buffer == 0) return kGuard + case_.contiguousOffset;
  return kGuard + (case_.shiftTensors ? (5 * size_t(buffer - 1)) % 16 : 0);
}

MultiCopyBuffers::MultiCopyBuffers(const MultiCopyCase& c, uint64_t seed) : case_(c) {
  const int n = int(c.sizes.size());
  const uint64_t total = contiguousStart(n);
  storage_.emplace_back(2 * kGuard + 16 + total + 64, kPoison);
  for (int i = 0; i < n; ++i) storage_.emplace_back(2 * kGuard + 16 + c.sizes[i] + 64, kPoison);
  for (auto& s : storage_) align_.push_back((64 - reinterpret_cast<uintptr_t>(s.data()) % 64) % 64);
  std::mt19937_64 rng(seed);
  auto fill = [&](int buffer, uint64_t bytes) {
    uint8_t* at = storage(buffer) + offsetOf(buffer);
    for (uint64_t b = 0; b < bytes; ++b) {
      at[b] = uint8_t(rng());
      if (at[b] == kPoison) at[b] = 0x5A;  // a lost byte must never look like an intact guard
    }
    original_.emplace_back(at, at + bytes);
  };
  if (c.pack) {
    for (int i = 0; i < n; ++i) fill(1 + i, c.sizes[i]);
  } else {
    fill(0, total);
  }
}

std::vector<cuda::CopySegment> MultiCopyBuffers::segments(const std::function<uint8_t*(int)>& base) const {
  std::vector<cuda::CopySegment> table;
  uint8_t* contiguous = base(0) + offsetOf(0);
  for (int i = 0; i < int(case_.sizes.size()); ++i) {
    uint8_t* tensor = base(1 + i) + offsetOf(1 + i);
    uint8_t* packed = contiguous + contiguousStart(i);
    cuda::CopySegment s;
    s.src = case_.pack ? tensor : packed;
    s.dst = case_.pack ? packed : tensor;
    s.bytes = case_.sizes[i];
    table.push_back(s);
  }
  cuda::planMultiCopy(table.data(), int(table.size()));
  return table;
}

std::string MultiCopyBuffers::check() {
  const int n = int(case_.sizes.size());
  auto bytesOf = [&](int buffer) { return buffer == 0 ? contiguousStart(n) : case_.sizes[buffer - 1]; };
  for (int i = 0; i < buffers(); ++i) {
    const size_t first = offsetOf(i), end = first + bytesOf(i);
    for (size_t b = 0; b < storageBytes(i); ++b)
      if ((b < first || b >= end) && storage(i)[b] != kPoison)
        return case_.name + ": buffer " + std::to_string(i) + " changed outside its bytes at " + std::to_string(b);
  }
  for (int i = 0; i < n; ++i) {
    const uint8_t* tensor = storage(1 + i) + offsetOf(1 + i);
    const uint8_t* packed = storage(0) + offsetOf(0) + contiguousStart(i);
    const uint8_t* want = case_.pack ? original_[i].data() : original_[0].data() + contiguousStart(i);
    for (uint64_t b = 0; b < case_.sizes[i]; ++b) {
      if (tensor[b] != want[b] || packed[b] != want[b])
        return case_.name + ": tensor " + std::to_string(i) + " (" + std::to_string(case_.sizes[i]) +
               " bytes) differs at byte " + std::to_string(b);
    }
  }
  return "";
}

}  // namespace strata::test
