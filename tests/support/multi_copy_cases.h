// Cases for the CUDA multi-tensor copy, shared by the CPU run of its body
// (unit/cuda_body_test.cc) and the GPU run (gpu/cuda_kernels_test.cc): many
// tensors packed into one contiguous buffer or unpacked from one, with random
// contents, sizes from 0 bytes to several chunks, assorted alignments and
// poisoned guard bytes around every buffer.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_kernels.h"

namespace strata::test {

struct MultiCopyCase {
  std::string name;
  std::vector<uint64_t> sizes;  // bytes of each tensor
  bool pack;                    // tensors -> contiguous (else contiguous -> tensors)
  uint64_t contiguousOffset;    // the contiguous buffer's offset from a 64-byte boundary
  bool shiftTensors;            // tensor i sits (5 i) mod 16 bytes past a boundary
};

std::vector<MultiCopyCase> multiCopyCases(bool large);

// What a grid of `blocks` x `threads` computes, run on the CPU one block and
// thread after another (kernels/cuda/multi_copy_body.h).
void runMultiCopyOnCpu(const std::vector<cuda::CopySegment>& table, uint64_t chunks, uint64_t blocks,
                       uint64_t threads);

class MultiCopyBuffers {
 public:
  static constexpr size_t kGuard = 64;
  static constexpr uint8_t kPoison = 0xCD;

  MultiCopyBuffers(const MultiCopyCase& c, uint64_t seed);

  // Buffer 0 is the contiguous one, buffer 1 + i tensor i; base(i) is where
  // buffer i's storage starts (64-byte aligned, storageBytes(i) long).
  std::vector<cuda::CopySegment> segments(const std::function<uint8_t*(int)>& base) const;
  std::vector<cuda::CopySegment> hostSegments() { return segments([this](int i) { return storage(i); }); }

  int buffers() const { return int(storage_.size()); }
  size_t storageBytes(int i) const { return storage_[i].size() - 64; }
  uint8_t* storage(int i) { return storage_[i].data() + align_[i]; }

  // "" when every destination byte equals its source byte, the sources are
  // unchanged and every guard byte is intact; else the first problem.
  std::string check();

 private:
  size_t offsetOf(int buffer) const;  // first byte's offset inside the storage
  uint64_t contiguousStart(int tensor) const;

  MultiCopyCase case_;
  std::vector<std::vector<uint8_t>> storage_;
  std::vector<size_t> align_;
  std::vector<std::vector<uint8_t>> original_;  // the sources' bytes
};

}  // namespace strata::test
