// The CUDA reduce-and-copy kernel's body run on the CPU: every worker index
// of grids of several sizes in turn, so that its work split (head, unrolled
// packs, single packs, tail), its arithmetic for every dtype x op and its
// fused copies are checked against the float64 reference on machines
// without a GPU. tests/gpu/cuda_kernels_test.cc runs the same cases on a GPU.
#include <gtest/gtest.h>

#include <cstring>

#include "core/dtype.h"
#include "kernels/cpu/reduce.h"
#include "kernels/cuda/host_bodies.h"
#include "kernels/cuda/multi_copy_body.h"
#include "support/multi_copy_cases.h"
#include "support/reduce_copy_cases.h"

namespace strata {
namespace {

struct KernelCase {
  strataDataType_t dtype;
  strataRedOp_t op;
};
class CudaBodyTest : public ::testing::TestWithParam<KernelCase> {};

TEST_P(CudaBodyTest, EveryCaseMatchesTheReferenceOnGridsOfSeveralSizes) {
  const auto [dtype, op] = GetParam();
  uint64_t seed = 1;
  for (const test::ReduceCopyCase& c : test::reduceCopyCases(dtype, op, false)) {
    // One thread; fewer threads than packs (several unrolled rounds); more
    // threads than elements (most idle).
    for (uint64_t workers : {uint64_t(1), uint64_t(5), uint64_t(1536)}) {
      test::ReduceCopyBuffers buffers(c, ++seed);
      cuda::reduceCopyOnHost(dtype, op, buffers.hostArgs(), workers);
      const std::string problem = buffers.check();
      ASSERT_EQ(problem, "") << "grid of " << workers << " threads";
    }
  }
}

// With two sources and no divisor the kernel computes exactly what the CPU
// kernels do (one rounding per element for float16 / bfloat16), so the
// device and host paths of a collective agree bit for bit.
// (Avg of float16 / bfloat16 is left out: the CPU path rounds the sum and
// then the quotient, the kernel rounds once.)
class CudaBodyBitsTest : public ::testing::TestWithParam<KernelCase> {};

TEST_P(CudaBodyBitsTest, TwoSourcesGiveTheCpuKernelsBits) {
  const auto [dtype, op] = GetParam();
  test::ReduceCopyCase c{dtype, op, 2, 1, 4099, test::Layout::kSameOffset, false};
  test::ReduceCopyBuffers buffers(c, 7);
  const cuda::ReduceCopyArgs a = buffers.hostArgs();
  const size_t bytes = c.count * dtypeSize(dtype);
  std::vector<uint8_t> cpu(bytes);
  kernels::reduce(cpu.data(), a.src[0], a.src[1], c.count, dtype, op == strataAvg ? strataSum : op);
  if (op == strataAvg) kernels::divide(cpu.data(), cpu.data(), c.count, dtype, 2);
  cuda::reduceCopyOnHost(dtype, op, a, 64);
  EXPECT_EQ(std::memcmp(cpu.data(), a.dst[0], bytes), 0) << dtypeName(dtype) << " " << redOpName(op);
}

std::vector<KernelCase> allCases() {
  std::vector<KernelCase> v;
  for (int t = 0; t < strataNumTypes; ++t)
    for (int op = 0; op < strataNumOps; ++op) v.push_back({strataDataType_t(t), strataRedOp_t(op)});
  return v;
}
std::string caseName(const ::testing::TestParamInfo<KernelCase>& info) {
  return std::string(dtypeName(info.param.dtype)) + "_" + redOpName(info.param.op);
}
INSTANTIATE_TEST_SUITE_P(AllDtypesAndOps, CudaBodyTest, ::testing::ValuesIn(allCases()), caseName);

std::vector<KernelCase> casesWithTheCpuKernelsBits() {
  std::vector<KernelCase> v;
  for (KernelCase c : allCases())
    if (!(c.op == strataAvg && (c.dtype == strataFloat16 || c.dtype == strataBfloat16))) v.push_back(c);
  return v;
}
INSTANTIATE_TEST_SUITE_P(AllButHalfAvg, CudaBodyBitsTest, ::testing::ValuesIn(casesWithTheCpuKernelsBits()),
                         caseName);

// Eight float32 copied onto themselves: arguments with nothing wrong.
cuda::ReduceCopyArgs eightFloats() {
  alignas(16) static float data[8];
  cuda::ReduceCopyArgs a;
  a.src[0] = data;
  a.dst[0] = data;
  a.nsrc = 1;
  a.ndst = 1;
  a.count = 8;
  return a;
}

// The launcher's checks run before any CUDA call, so they are testable here;
// and without a device (or without CUDA) a good launch is refused with a
// sentence saying so.
TEST(CudaLaunch, RefusesBadArgumentsWithASentence) {
  const cuda::ReduceCopyArgs a = eightFloats();
  if (!cuda::built()) {
    EXPECT_NE(cuda::enqueueReduceCopy(a, strataFloat32, strataSum, nullptr).find("built without CUDA"),
              std::string::npos);
    return;
  }
  cuda::ReduceCopyArgs none = a;
  none.nsrc = 0;
  EXPECT_NE(cuda::enqueueReduceCopy(none, strataFloat32, strataSum, nullptr).find("0 sources"), std::string::npos);
  cuda::ReduceCopyArgs tooMany = a;
  tooMany.nsrc = cuda::kMaxSources + 1;
  EXPECT_NE(cuda::enqueueReduceCopy(tooMany, strataFloat32, strataSum, nullptr).find("1-8"), std::string::npos);
  cuda::ReduceCopyArgs crooked = a;
  crooked.src[0] = reinterpret_cast<const char*>(a.src[0]) + 2;
  EXPECT_NE(cuda::enqueueReduceCopy(crooked, strataFloat32, strataSum, nullptr).find("not aligned"),
            std::string::npos);
  EXPECT_NE(cuda::enqueueReduceCopy(a, strataDataType_t(99), strataSum, nullptr).find("invalid dtype"),
            std::string::npos);
  cuda::ReduceCopyArgs empty = a;
  empty.count = 0;
  EXPECT_EQ(cuda::enqueueReduceCopy(empty, strataFloat32, strataSum, nullptr), "") << "count 0 is a no-op";
  if (cuda::visibleDevices() == 0) {
    const std::string error = cuda::enqueueReduceCopy(a, strataFloat32, strataSum, nullptr);
    EXPECT_NE(error.find("no usable CUDA device"), std::string::npos) << error;
  }
}

}  // namespace
}  // namespace strata

namespace strata {
namespace {

// The multi-tensor copy's body on the CPU: every block and thread of grids
// of several shapes, packing and unpacking tensors of 0 bytes to several
// chunks at assorted alignments.
TEST(CudaMultiCopyBody, PacksAndUnpacksEveryByteOnGridsOfSeveralShapes) {
  uint64_t seed = 1;
  for (const test::MultiCopyCase& c : test::multiCopyCases(false)) {
    for (auto [blocks, threads] : {std::pair<uint64_t, uint64_t>{1, 1}, {3, 32}, {7, 64}}) {
      test::MultiCopyBuffers buffers(c, ++seed);
      const std::vector<cuda::CopySegment> table = buffers.hostSegments();
      const uint64_t chunks = table.empty() ? 0 : table.back().firstChunk +
                              (table.back().bytes + cuda::kCopyChunkBytes - 1) / cuda::kCopyChunkBytes;
      test::runMultiCopyOnCpu(table, chunks, blocks, threads);
      ASSERT_EQ(buffers.check(), "") << blocks << " blocks x " << threads << " threads";
    }
  }
}

// The by-value copy: launches of at most kInlineCopySegments segments, each
// planned on its own, that together copy every byte.
TEST(CudaMultiCopyBody, InlineTablesCopyEverySegmentInLaunchesOfAtMost120) {
  uint64_t seed = 100;
  for (const test::MultiCopyCase& c : test::multiCopyCases(false)) {
    test::MultiCopyBuffers buffers(c, ++seed);
    const std::vector<cuda::CopySegment> segments = buffers.hostSegments();
    const std::vector<cuda::InlineCopyTable> tables = cuda::inlineCopyTables(segments.data(), int(segments.size()));
    const size_t launches = (segments.size() + cuda::kInlineCopySegments - 1) / cuda::kInlineCopySegments;
    ASSERT_EQ(tables.size(), launches) << c.name;
    for (const cuda::InlineCopyTable& t : tables) {
      ASSERT_GT(t.n, 0) << c.name;
      ASSERT_LE(t.n, cuda::kInlineCopySegments) << c.name;
      test::runMultiCopyOnCpu(std::vector<cuda::CopySegment>(t.segments, t.segments + t.n), t.chunks, 3, 32);
    }
    ASSERT_EQ(buffers.check(), "") << c.name;
  }
}

TEST(CudaMultiCopyBody, ChunkPlanningSkipsEmptySegments) {
  std::vector<cuda::CopySegment> table(5);
  const uint64_t sizes[] = {0, cuda::kCopyChunkBytes + 1, 0, 0, 5};
  for (int i = 0; i < 5; ++i) table[i].bytes = sizes[i];
  EXPECT_EQ(cuda::planMultiCopy(table.data(), 5), 3u);
  EXPECT_EQ(cuda::body::segmentOfChunk(table.data(), 5, 0), 1);
  EXPECT_EQ(cuda::body::segmentOfChunk(table.data(), 5, 1), 1);
  EXPECT_EQ(cuda::body::segmentOfChunk(table.data(), 5, 2), 4);
}

}  // namespace
}  // namespace strata
