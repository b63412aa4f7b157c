// The CUDA reduce-and-copy kernel on a GPU: every dtype x op x case of
// support/reduce_copy_cases.h (random inputs, poisoned outputs inside guard
// bytes, odd counts, in place, unaligned layouts, up to 1 Mi elements) against
// the float64 reference, and bit for bit against the kernel body run on the
// CPU. Skipped, and reported as skipped by ctest, when no GPU is visible.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>

#include "core/dtype.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/host_bodies.h"
#include "support/multi_copy_cases.h"
#include "support/reduce_copy_cases.h"

namespace strata {
namespace {

#define SKIP_WITHOUT_GPU()                                                                         \
  if (cuda::visibleDevices() == 0)                                                                 \
  GTEST_SKIP() << "no CUDA device visible: the GPU tests need one (scripts/gpu-check.sh runs them " \
                  "on a GPU machine)"

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call << ": " << cudaGetErrorString(cudaGetLastError())

// Runs one case on the device: the host buffers' bytes (guards included) go to
// device buffers laid out the same way, the kernel runs on `stream`, and the
// bytes come back into the host buffers for check(). The copies in go on
// `stream` too: a plain cudaMemcpy from pageable memory may return before its
// bytes land, and a non-blocking stream does not wait for it. (With plain
// copies, 23 of 53 cases failed on an H200 when run side by side, and those
// tried one at a time under compute-sanitizer passed.)
void runOnDevice(test::ReduceCopyBuffers& buffers, const test::ReduceCopyCase& c, cudaStream_t stream) {
  std::vector<uint8_t*> device(buffers.buffers());
  for (int i = 0; i < buffers.buffers(); ++i) {
    CUDA_OK(cudaMalloc(&device[i], buffers.storageBytes()));
    CUDA_OK(cudaMemcpyAsync(device[i], buffers.storage(i), buffers.storageBytes(), cudaMemcpyHostToDevice, stream));
  }
  const cuda::ReduceCopyArgs args = buffers.args([&](int i) { return device[i]; });
  ASSERT_EQ(cuda::enqueueReduceCopy(args, c.dtype, c.op, stream), "") << c.name();
  CUDA_OK(cudaStreamSynchronize(stream));
  for (int i = 0; i < buffers.buffers(); ++i) {
    CUDA_OK(cudaMemcpy(buffers.storage(i), device[i], buffers.storageBytes(), cudaMemcpyDeviceToHost));
    CUDA_OK(cudaFree(device[i]));
  }
}

struct KernelCase {
  strataDataType_t dtype;
  strataRedOp_t op;
};
class CudaKernelTest : public ::testing::TestWithParam<KernelCase> {};

TEST_P(CudaKernelTest, EveryCaseMatchesTheReference) {
  SKIP_WITHOUT_GPU();
  const auto [dtype, op] = GetParam();
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  uint64_t seed = 1;
  for (const test::ReduceCopyCase& c : test::reduceCopyCases(dtype, op, true)) {
    test::ReduceCopyBuffers buffers(c, ++seed), onCpu(c, seed);
    runOnDevice(buffers, c, stream);
    if (HasFatalFailure()) break;
    ASSERT_EQ(buffers.check(), "");
    cuda::reduceCopyOnHost(dtype, op, onCpu.hostArgs(), 1);
    ASSERT_EQ(std::memcmp(buffers.destination(0), onCpu.destination(0), c.count * dtypeSize(dtype)), 0)
        << c.name() << ": the GPU's bits differ from the kernel body's on the CPU";
  }
  CUDA_OK(cudaStreamDestroy(stream));
}

std::vector<KernelCase> allCases() {
  std::vector<KernelCase> v;
  for (int t = 0; t < strataNumTypes; ++t)
    for (int op = 0; op < strataNumOps; ++op) v.push_back({strataDataType_t(t), strataRedOp_t(op)});
  return v;
}
INSTANTIATE_TEST_SUITE_P(AllDtypesAndOps, CudaKernelTest, ::testing::ValuesIn(allCases()),
                         [](const auto& info) {
                           return std::string(dtypeName(info.param.dtype)) + "_" + redOpName(info.param.op);
                         });

// Stream order: a launch returns at once, and a copy enqueued after it on the
// same stream sees its result, with the host never waiting in between.
TEST(CudaKernelStream, ACopyEnqueuedAfterTheLaunchSeesItsResult) {
  SKIP_WITHOUT_GPU();
  const size_t count = (size_t(1) << 24) + 7;  // large enough that the launch cannot finish at once
  std::vector<float> a(count), b(count), got(count);
  for (size_t i = 0; i < count; ++i) {
    a[i] = float(i % 1000) * 0.25f;
    b[i] = float((i * 7) % 1003) * 0.5f;
  }
  float *da, *db, *dout;
  CUDA_OK(cudaMalloc(&da, count * 4));
  CUDA_OK(cudaMalloc(&db, count * 4));
  CUDA_OK(cudaMalloc(&dout, count * 4));
  CUDA_OK(cudaMemcpy(da, a.data(), count * 4, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(db, b.data(), count * 4, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemset(dout, 0xff, count * 4));
  CUDA_OK(cudaDeviceSynchronize());  // the legacy stream's copies and fill land before the non-blocking stream
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cuda::ReduceCopyArgs args;
  args.src[0] = da;
  args.src[1] = db;
  args.dst[0] = dout;
  args.nsrc = 2;
  args.ndst = 1;
  args.count = count;
  ASSERT_EQ(cuda::enqueueReduceCopy(args, strataFloat32, strataSum, stream), "");
  CUDA_OK(cudaMemcpyAsync(got.data(), dout, count * 4, cudaMemcpyDeviceToHost, stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  size_t bad = 0;
  for (size_t i = 0; i < count; ++i) bad += got[i] != a[i] + b[i];
  EXPECT_EQ(bad, 0u);
  CUDA_OK(cudaStreamDestroy(stream));
  CUDA_OK(cudaFree(da));
  CUDA_OK(cudaFree(db));
  CUDA_OK(cudaFree(dout));
}

// The multi-tensor copy on a device: one launch per case, the segment table
// in device memory, the same cases as the CPU run plus ~100 MiB of 200 tensors.
TEST(CudaMultiCopy, PacksAndUnpacksEveryByteInOneLaunch) {
  SKIP_WITHOUT_GPU();
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  uint64_t seed = 1;
  for (const test::MultiCopyCase& c : test::multiCopyCases(true)) {
    test::MultiCopyBuffers buffers(c, ++seed);
    std::vector<uint8_t*> device(buffers.buffers());
    for (int i = 0; i < buffers.buffers(); ++i) {
      CUDA_OK(cudaMalloc(&device[i], buffers.storageBytes(i)));
      CUDA_OK(cudaMemcpyAsync(device[i], buffers.storage(i), buffers.storageBytes(i), cudaMemcpyHostToDevice,
                              stream));
    }
    const std::vector<cuda::CopySegment> table = buffers.segments([&](int i) { return device[i]; });
    const uint64_t chunks = table.empty() ? 0 : table.back().firstChunk +
                            (table.back().bytes + cuda::kCopyChunkBytes - 1) / cuda::kCopyChunkBytes;
    cuda::CopySegment* deviceTable = nullptr;
    CUDA_OK(cudaMalloc(&deviceTable, sizeof(cuda::CopySegment) * (table.size() + 1)));
    CUDA_OK(cudaMemcpyAsync(deviceTable, table.data(), sizeof(cuda::CopySegment) * table.size(),
                            cudaMemcpyHostToDevice, stream));
    ASSERT_EQ(cuda::enqueueMultiCopy(deviceTable, int(table.size()), chunks, stream), "") << c.name;
    CUDA_OK(cudaStreamSynchronize(stream));
    for (int i = 0; i < buffers.buffers(); ++i) {
      CUDA_OK(cudaMemcpy(buffers.storage(i), device[i], buffers.storageBytes(i), cudaMemcpyDeviceToHost));
      CUDA_OK(cudaFree(device[i]));
    }
    CUDA_OK(cudaFree(deviceTable));
    ASSERT_EQ(buffers.check(), "");
  }
  CUDA_OK(cudaStreamDestroy(stream));
}

// The by-value copy between device memory and mapped pinned host memory (the
// device path's staging): the host's table is freed before the stream runs.
TEST(CudaMultiCopy, InlineTablesCopyBetweenDeviceAndPinnedMemory) {
  SKIP_WITHOUT_GPU();
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  uint64_t seed = 100;
  for (const test::MultiCopyCase& c : test::multiCopyCases(true)) {
    test::MultiCopyBuffers buffers(c, ++seed);
    std::vector<uint8_t*> memory(buffers.buffers());
    for (int i = 0; i < buffers.buffers(); ++i) {  // the contiguous buffer pinned, the tensors on the device
      if (i == 0) CUDA_OK(cudaHostAlloc(&memory[i], buffers.storageBytes(i), cudaHostAllocPortable | cudaHostAllocMapped));
      else CUDA_OK(cudaMalloc(&memory[i], buffers.storageBytes(i)));
      CUDA_OK(cudaMemcpyAsync(memory[i], buffers.storage(i), buffers.storageBytes(i), cudaMemcpyDefault, stream));
    }
    CUDA_OK(cudaStreamSynchronize(stream));
    {
      // The stream is held back 100 ms, so the launches run after the table is overwritten and freed.
      CUDA_OK(cudaLaunchHostFunc(stream, [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(100)); },
                                 nullptr));
      auto table = std::make_unique<std::vector<cuda::CopySegment>>(buffers.segments([&](int i) { return memory[i]; }));
      ASSERT_EQ(cuda::enqueueInlineMultiCopy(table->data(), int(table->size()), stream), "") << c.name;
      std::fill(reinterpret_cast<uint8_t*>(table->data()),
                reinterpret_cast<uint8_t*>(table->data() + table->size()), uint8_t(0xEE));
      table.reset();
    }
    CUDA_OK(cudaStreamSynchronize(stream));
    for (int i = 0; i < buffers.buffers(); ++i) {
      CUDA_OK(cudaMemcpy(buffers.storage(i), memory[i], buffers.storageBytes(i), cudaMemcpyDefault));
      if (i == 0) CUDA_OK(cudaFreeHost(memory[i]));
      else CUDA_OK(cudaFree(memory[i]));
    }
    ASSERT_EQ(buffers.check(), "") << c.name;
  }
  CUDA_OK(cudaStreamDestroy(stream));
}

}  // namespace
}  // namespace strata
