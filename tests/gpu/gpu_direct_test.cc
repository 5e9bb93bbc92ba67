// The direct allreduce of ranks that are threads of one process on one GPU
// (src/device/direct_plan.h), where the collective suite does not reach: each rank scaling its
// input by its own PreMulSum multiplier (in 16-byte words, and element by element in buffers that
// are not 16-byte aligned), calls of changing sizes interleaved with ring collectives (each call's
// number is counted on the device), and a captured CUDA graph replayed. Skipped, saying so, where
// no GPU is present.

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "nccl.h"
#include "tests/gpu/cuda_assert.h"
#include "tests/gpu/gpu_presence.h"
#include "tests/harness/comm_clique.h"
#include "tests/harness/deadline_guard.h"
#include "tests/harness/scoped_env.h"

namespace weft::gpu_tests {
namespace {

using harness::ncclSucceeded;

const std::chrono::seconds kDeadline = gpuTestDeadline(std::chrono::seconds{60});
constexpr int kRanks = 3;
constexpr size_t kCount = 100003;

class DirectAllReduce : public ::testing::Test {
 protected:
  harness::ScopedEnv direct_{"WEFT_GPU_DIRECT", "1"};  // whatever the environment says

  void SetUp() override {
    SKIP_WITHOUT_GPU();
    ASSERT_CUDA(cudaSetDevice(0));
    std::vector<int> devices(kRanks, 0);
    comms_.resize(kRanks);
    ASSERT_TRUE(ncclSucceeded(ncclCommInitAll(comms_.data(), kRanks, devices.data())));
    for (int r = 0; r < kRanks; ++r) {
      cudaStream_t stream = nullptr;
      ASSERT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      streams_.push_back(stream);
      void* memory = nullptr;
      ASSERT_CUDA(cudaMalloc(&memory, (kCount + 1) * sizeof(float)));
      allocations_.push_back(static_cast<float*>(memory));
    }
  }

  void TearDown() override {
    for (cudaStream_t stream : streams_) (void)cudaStreamSynchronize(stream);
    for (ncclComm_t comm : comms_) {
      if (comm != nullptr) (void)ncclCommDestroy(comm);
    }
    for (float* memory : allocations_) (void)cudaFree(memory);
    for (cudaStream_t stream : streams_) (void)cudaStreamDestroy(stream);
  }

  // Rank r's buffer: its allocation from element offsets_[r] on (1: 4 bytes past a 16-byte
  // boundary).
  float* buffer(int r) const { return allocations_[r] + offsets_[r]; }

  void fill(float value(int rank)) {
    for (int r = 0; r < kRanks; ++r) {
      std::vector<float> values(kCount, value(r));
      ASSERT_CUDA(cudaMemcpyAsync(buffer(r), values.data(), kCount * sizeof(float), cudaMemcpyHostToDevice,
                                  streams_[r]));
    }
  }

  // Every rank's first `prefix` elements equal `head`, the rest `rest`.
  void expect(size_t prefix, float head, float rest) {
    for (int r = 0; r < kRanks; ++r) {
      std::vector<float> got(kCount);
      ASSERT_CUDA(cudaMemcpyAsync(got.data(), buffer(r), kCount * sizeof(float), cudaMemcpyDeviceToHost,
                                  streams_[r]));
      ASSERT_CUDA(cudaStreamSynchronize(streams_[r]));
      for (size_t i = 0; i < kCount; ++i) {
        ASSERT_EQ(got[i], i < prefix ? head : rest) << "rank " << r << " element " << i;
      }
    }
  }

  // One group: every rank's in-place allreduce of `count` elements with op[r].
  void allReduce(size_t count, const std::vector<ncclRedOp_t>& op) {
    ASSERT_TRUE(ncclSucceeded(ncclGroupStart()));
    for (int r = 0; r < kRanks; ++r) {
      ASSERT_TRUE(ncclSucceeded(
          ncclAllReduce(buffer(r), buffer(r), count, ncclFloat32, op[r], comms_[r], streams_[r])));
    }
    ASSERT_TRUE(ncclSucceeded(ncclGroupEnd()));
  }

  // Rank r's input, all r + 2, times its own PreMulSum multiplier r + 1, summed over the ranks:
  // any other pairing of inputs and multipliers gives less.
  void allReduceScaledByRank() {
    std::vector<ncclRedOp_t> scaled(kRanks);
    for (int r = 0; r < kRanks; ++r) {
      float multiplier = static_cast<float>(r + 1);
      ASSERT_TRUE(ncclSucceeded(
          ncclRedOpCreatePreMulSum(&scaled[r], &multiplier, ncclFloat32, ncclScalarHostImmediate, comms_[r])));
    }
    ASSERT_NO_FATAL_FAILURE(fill([](int r) { return static_cast<float>(r + 2); }));
    ASSERT_NO_FATAL_FAILURE(allReduce(kCount, scaled));
    ASSERT_NO_FATAL_FAILURE(expect(0, 0, 2 * 1 + 3 * 2 + 4 * 3));
    for (int r = 0; r < kRanks; ++r) ASSERT_TRUE(ncclSucceeded(ncclRedOpDestroy(scaled[r], comms_[r])));
  }

  std::vector<ncclComm_t> comms_;
  std::vector<cudaStream_t> streams_;
  std::vector<float*> allocations_;
  std::vector<size_t> offsets_ = std::vector<size_t>(kRanks, 0);
};

TEST_F(DirectAllReduce, EachRanksOwnMultiplierIsExact) {
  harness::DeadlineGuard guard(kDeadline, "direct allreduce with a multiplier per rank");
  ASSERT_NO_FATAL_FAILURE(allReduceScaledByRank());  // 16-byte words, then the last elements
}

TEST_F(DirectAllReduce, UnalignedBuffersAndEachRanksOwnMultiplierAreExact) {
  harness::DeadlineGuard guard(kDeadline, "direct allreduce of unaligned buffers");
  // Only the last rank's buffer is off a 16-byte boundary: every rank's blocks must then take
  // the element-at-a-time path, or some elements would be written twice and others never.
  offsets_.back() = 1;
  ASSERT_NO_FATAL_FAILURE(allReduceScaledByRank());
}

TEST_F(DirectAllReduce, CallsOfChangingSizesBetweenRingCollectivesAreExact) {
  harness::DeadlineGuard guard(kDeadline, "direct allreduces between broadcasts");
  const std::vector<ncclRedOp_t> sum(kRanks, ncclSum);
  ASSERT_NO_FATAL_FAILURE(fill([](int r) { return static_cast<float>(r + 1); }));
  ASSERT_NO_FATAL_FAILURE(allReduce(kCount, sum));  // 6 everywhere
  for (size_t count : {size_t{5}, size_t{4099}, size_t{1}}) {
    // A ring collective between two direct calls: rank 0's 6s everywhere, then the prefix triples.
    ASSERT_TRUE(ncclSucceeded(ncclGroupStart()));
    for (int r = 0; r < kRanks; ++r) {
      ASSERT_TRUE(ncclSucceeded(
          ncclBroadcast(buffer(r), buffer(r), kCount, ncclFloat32, 0, comms_[r], streams_[r])));
    }
    ASSERT_TRUE(ncclSucceeded(ncclGroupEnd()));
    ASSERT_NO_FATAL_FAILURE(allReduce(count, sum));
    ASSERT_NO_FATAL_FAILURE(expect(count, 18, 6));
    ASSERT_NO_FATAL_FAILURE(fill([](int) { return 6.0f; }));
  }
}

TEST_F(DirectAllReduce, ACapturedGraphCountsItsReplays) {
  harness::DeadlineGuard guard(kDeadline, "direct allreduce replayed from a CUDA graph");
  const std::vector<ncclRedOp_t> sum(kRanks, ncclSum);
  ASSERT_NO_FATAL_FAILURE(fill([](int r) { return static_cast<float>(r + 1); }));
  ASSERT_NO_FATAL_FAILURE(allReduce(kCount, sum));  // 6: the communicators' GPU resources exist
  std::vector<cudaGraphExec_t> graphs(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_CUDA(cudaStreamBeginCapture(streams_[r], cudaStreamCaptureModeThreadLocal));
    ASSERT_TRUE(ncclSucceeded(
        ncclAllReduce(buffer(r), buffer(r), kCount, ncclFloat32, ncclSum, comms_[r], streams_[r])));
    cudaGraph_t graph = nullptr;
    ASSERT_CUDA(cudaStreamEndCapture(streams_[r], &graph));
    ASSERT_CUDA(cudaGraphInstantiate(&graphs[r], graph, 0));
    ASSERT_CUDA(cudaGraphDestroy(graph));
  }
  for (int replay = 0; replay < 3; ++replay) {
    for (int r = 0; r < kRanks; ++r) ASSERT_CUDA(cudaGraphLaunch(graphs[r], streams_[r]));
  }
  ASSERT_NO_FATAL_FAILURE(expect(0, 0, 6 * 27));  // tripled at each replay
  for (cudaGraphExec_t graph : graphs) ASSERT_CUDA(cudaGraphExecDestroy(graph));
}

}  // namespace
}  // namespace weft::gpu_tests
