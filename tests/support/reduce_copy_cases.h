// Cases for the CUDA reduce-and-copy kernel, shared by the CPU run of its body
// (unit/cuda_body_test.cc) and the GPU run (gpu/cuda_kernels_test.cc): host
// buffers with random sources and poisoned destinations inside guard bytes,
// the argument block pointing into them (or into device copies laid out the
// same way), and the check against the float64 / exact-integer reference.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_kernels.h"

namespace strata::test {

// Where buffers sit relative to a 16-byte boundary.
enum class Layout {
  kAligned,       // all on a boundary: head 0, packs, tail
  kSameOffset,    // all one element past it: head, packs, tail
  kMixedOffsets,  // sources at different offsets: element by element
};

struct ReduceCopyCase {
  strataDataType_t dtype;
  strataRedOp_t op;
  int nsrc;
  int ndst;
  uint64_t count;
  Layout layout;
  bool inPlace;  // destination 0 is source 0
  std::string name() const;
};

// Every combination worth running for one dtype x op: 1, 2, 3 and 8 sources,
// 1 and 2 destinations, odd counts from 0 up, each layout, in place or not.
std::vector<ReduceCopyCase> reduceCopyCases(strataDataType_t dtype, strataRedOp_t op, bool large);


class ReduceCopyBuffers {
 public:
  static constexpr size_t kGuard = 64;  // poisoned bytes before and after each buffer
  static constexpr uint8_t kPoison = 0xAB;

  ReduceCopyBuffers(const ReduceCopyCase& c, uint64_t seed);

  // Arguments over buffers whose storage starts at base(i) for buffer i
  // (sources first, then destinations); `base` must be 64-byte aligned.
  cuda::ReduceCopyArgs args(const std::function<uint8_t*(int)>& base) const;
  cuda::ReduceCopyArgs hostArgs() { return args([this](int i) { return storage_[i].data() + align_[i]; }); }

  int buffers() const { return int(storage_.size()); }
  size_t storageBytes() const { return bytes_; }
  // The aligned storage of buffer i (bytes_ long).
  uint8_t* storage(int i) { return storage_[i].data() + align_[i]; }

  // Destination d's elements.
  const uint8_t* destination(int d);

  // "" when every destination holds the reference and every guard byte is
  // intact; otherwise what is wrong, first problem only.
  std::string check();

 private:
  size_t offsetOf(int buffer) const;  // first element's offset inside the storage

  ReduceCopyCase case_;
  size_t bytes_ = 0;
  std::vector<std::vector<uint8_t>> storage_;  // one per source, then one per destination (not in place)
  std::vector<size_t> align_;                  // from storage_[i].data() to a 64-byte boundary
  std::vector<std::vector<uint8_t>> original_;  // each source's values before the run
};

}  // namespace strata::test
