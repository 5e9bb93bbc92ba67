// Nonblocking communicators on GPU buffers behave as on host buffers: their init and a group of
// their calls may return ncclInProgress, ncclCommGetAsyncError says when each is done, and the
// calls are then on their streams. A call on cudaStreamPerThread is refused: a nonblocking launch
// runs on a thread of Weft's own, where that handle names another stream. Ranks are communicators
// of this process on GPU 0, driven from the test's thread. A launch refused in the background
// (two ranks on one stream) is the communicators' async error. Skipped, saying so, where no GPU is
// present.

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "nccl.h"
#include "tests/gpu/cuda_assert.h"
#include "tests/gpu/gpu_presence.h"
#include "tests/harness/async_state.h"
#include "tests/harness/comm_clique.h"
#include "tests/harness/deadline_guard.h"

namespace weft::gpu_tests {
namespace {

using harness::ncclSucceeded;

const std::chrono::seconds kDeadline = gpuTestDeadline(std::chrono::seconds{60});
constexpr int kRanks = 2;
constexpr size_t kCount = 4099;

::testing::AssertionResult succeededOrInProgress(ncclResult_t result) {
  if (result == ncclInProgress) return ::testing::AssertionSuccess();
  return ncclSucceeded(result);
}

TEST(GpuNonblocking, InitAndAGroupOfCallsSettleThroughGetAsyncError) {
  SKIP_WITHOUT_GPU();
  harness::DeadlineGuard guard(kDeadline, "nonblocking communicators on GPU buffers");
  ASSERT_CUDA(cudaSetDevice(0));
  ncclUniqueId id;
  ASSERT_TRUE(ncclSucceeded(ncclGetUniqueId(&id)));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  std::vector<ncclComm_t> comms(kRanks, nullptr);
  harness::CommClique clique;
  ASSERT_TRUE(ncclSucceeded(ncclGroupStart()));
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_TRUE(succeededOrInProgress(ncclCommInitRankConfig(&comms[r], kRanks, id, r, &config)));
  }
  ASSERT_TRUE(succeededOrInProgress(ncclGroupEnd()));
  clique.adopt(comms);
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_TRUE(ncclSucceeded(harness::settledState(comms[r]))) << "init of rank " << r;
  }

  std::vector<cudaStream_t> streams(kRanks, nullptr);
  std::vector<float*> buffers(kRanks, nullptr);
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_CUDA(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking));
    void* memory = nullptr;
    ASSERT_CUDA(cudaMalloc(&memory, kCount * sizeof(float)));
    buffers[r] = static_cast<float*>(memory);
    const std::vector<float> values(kCount, static_cast<float>(r + 1));
    ASSERT_CUDA(cudaMemcpyAsync(buffers[r], values.data(), kCount * sizeof(float), cudaMemcpyHostToDevice,
                                streams[r]));
  }
  ASSERT_TRUE(ncclSucceeded(ncclGroupStart()));
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_TRUE(succeededOrInProgress(
        ncclAllReduce(buffers[r], buffers[r], kCount, ncclFloat32, ncclSum, comms[r], streams[r])));
  }
  ASSERT_TRUE(succeededOrInProgress(ncclGroupEnd()));
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_TRUE(ncclSucceeded(harness::settledState(comms[r]))) << "allreduce of rank " << r;
  }
  for (int r = 0; r < kRanks; ++r) {
    std::vector<float> got(kCount);
    ASSERT_CUDA(cudaMemcpyAsync(got.data(), buffers[r], kCount * sizeof(float), cudaMemcpyDeviceToHost, streams[r]));
    ASSERT_CUDA(cudaStreamSynchronize(streams[r]));
    for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(got[i], 3.0f) << "rank " << r << " element " << i;
  }

  EXPECT_EQ(ncclAllReduce(buffers[0], buffers[0], kCount, ncclFloat32, ncclSum, comms[0], cudaStreamPerThread),
            ncclInvalidUsage);
  EXPECT_NE(std::strstr(ncclGetLastError(comms[0]), "cudaStreamPerThread"), nullptr) << ncclGetLastError(comms[0]);
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(harness::settledState(comms[r]), ncclSuccess) << "rank " << r << " after the refusal";
  }

  // Refused in the background (both ranks on one stream): the async error says so, and the
  // communicators are done for.
  ASSERT_TRUE(ncclSucceeded(ncclGroupStart()));
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_TRUE(succeededOrInProgress(
        ncclAllReduce(buffers[r], buffers[r], kCount, ncclFloat32, ncclSum, comms[r], streams[0])));
  }
  const ncclResult_t grouped = ncclGroupEnd();
  EXPECT_TRUE(grouped == ncclInProgress || grouped == ncclInvalidUsage) << ncclGetErrorString(grouped);
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(harness::settledState(comms[r]), ncclInvalidUsage) << "rank " << r;

  clique = harness::CommClique();  // destroys the communicators before their buffers
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(cudaFree(buffers[r]), cudaSuccess);
    EXPECT_EQ(cudaStreamDestroy(streams[r]), cudaSuccess);
  }
}

}  // namespace
}  // namespace weft::gpu_tests
