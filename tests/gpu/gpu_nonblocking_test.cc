// Nonblocking communicators on GPU buffers behave as on host buffers: their init and a group of
// their calls may return ncclInProgress, ncclCommGetAsyncError says when each is done, and the
// calls are then on their streams. A call on cudaStreamPerThread is refused: a nonblocking launch
// runs on a thread of Weft's own, where that handle names another stream. Two launches of one
// thread reach the streams they share in call order, whatever their communicators. Ranks are
// communicators of this process on GPU 0, driven from the test's thread. A launch refused in the
// background (two ranks on one stream) is the communicators' async error. Skipped, saying so,
// where no GPU is present.

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "nccl.h"
#include "tests/gpu/cuda_assert.h"
#include "tests/gpu/gpu_presence.h"
#include "tests/harness/async_state.h"
#include "tests/harness/comm_clique.h"
#include "tests/harness/deadline_guard.h"
#include "tests/harness/scoped_env.h"

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

/// Makes a communicator of kRanks ranks on the current GPU, driven from this thread, nonblocking
/// unless `blocking`, and waits for its init.
void initClique(harness::CommClique* clique, bool blocking = false) {
  ncclUniqueId id;
  ASSERT_TRUE(ncclSucceeded(ncclGetUniqueId(&id)));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = blocking ? 1 : 0;
  std::vector<ncclComm_t> comms(kRanks, nullptr);
  ASSERT_TRUE(ncclSucceeded(ncclGroupStart()));
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_TRUE(succeededOrInProgress(ncclCommInitRankConfig(&comms[r], kRanks, id, r, &config)));
  }
  ASSERT_TRUE(succeededOrInProgress(ncclGroupEnd()));
  clique->adopt(comms);
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_TRUE(ncclSucceeded(harness::settledState(comms[r]))) << "init of rank " << r;
  }
}

/// Per rank, a stream of its own and kCount floats of device memory.
struct RankBuffers {
  std::vector<cudaStream_t> streams = std::vector<cudaStream_t>(kRanks, nullptr);
  std::vector<float*> buffers = std::vector<float*>(kRanks, nullptr);

  void make() {
    for (int r = 0; r < kRanks; ++r) {
      ASSERT_CUDA(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking));
      void* memory = nullptr;
      ASSERT_CUDA(cudaMalloc(&memory, kCount * sizeof(float)));
      buffers[r] = static_cast<float*>(memory);
    }
  }
  /// Rank r's buffer holds r + 1 in every element.
  void fillWithRankPlusOne() {
    for (int r = 0; r < kRanks; ++r) {
      const std::vector<float> values(kCount, static_cast<float>(r + 1));
      ASSERT_CUDA(cudaMemcpyAsync(buffers[r], values.data(), kCount * sizeof(float), cudaMemcpyHostToDevice,
                                  streams[r]));
      ASSERT_CUDA(cudaStreamSynchronize(streams[r]));
    }
  }
  /// Rank r's buffer as it is once its stream's work so far has run.
  void read(int r, std::vector<float>* out) {
    out->assign(kCount, 0.0f);
    ASSERT_CUDA(cudaMemcpyAsync(out->data(), buffers[r], kCount * sizeof(float), cudaMemcpyDeviceToHost, streams[r]));
    ASSERT_CUDA(cudaStreamSynchronize(streams[r]));
  }
  /// Once the communicators that use them are gone.
  void free() {
    for (int r = 0; r < kRanks; ++r) {
      EXPECT_EQ(cudaFree(buffers[r]), cudaSuccess);
      EXPECT_EQ(cudaStreamDestroy(streams[r]), cudaSuccess);
    }
  }
};

TEST(GpuNonblocking, InitAndAGroupOfCallsSettleThroughGetAsyncError) {
  SKIP_WITHOUT_GPU();
  harness::DeadlineGuard guard(kDeadline, "nonblocking communicators on GPU buffers");
  ASSERT_CUDA(cudaSetDevice(0));
  harness::CommClique clique;
  ASSERT_NO_FATAL_FAILURE(initClique(&clique));
  const std::vector<ncclComm_t>& comms = clique.comms();

  RankBuffers ranks;
  ASSERT_NO_FATAL_FAILURE(ranks.make());
  ASSERT_NO_FATAL_FAILURE(ranks.fillWithRankPlusOne());
  const std::vector<cudaStream_t>& streams = ranks.streams;
  const std::vector<float*>& buffers = ranks.buffers;
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
    std::vector<float> got;
    ASSERT_NO_FATAL_FAILURE(ranks.read(r, &got));
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
  ranks.free();
}

// Two launches of this thread, of two communicators: the first, of a nonblocking one, runs on a
// thread of Weft's own; the second too, or (with the parameter) on this thread. They still reach
// the streams they share in the order they were made (src/core/stream_turns.h). The first (kSums
// allreduces, more to prepare) sums, the second multiplies: the other order gives other values.
// Whether a wrong order shows depends on timing; it may also show as kernels that wait for each
// other until the deadline. It relies on nothing setting up at the call (which may be overtaken):
// the ranks are threads of one process, so their connections are made at init, and WEFT_CHECK is
// off.
class GpuLaunchOrder : public ::testing::TestWithParam<bool> {};

TEST_P(GpuLaunchOrder, LaunchesOfTwoCommunicatorsReachASharedStreamInCallOrder) {
  SKIP_WITHOUT_GPU();
  harness::DeadlineGuard guard(kDeadline, "two communicators sharing streams");
  harness::ScopedEnv noCheck("WEFT_CHECK", nullptr);
  ASSERT_CUDA(cudaSetDevice(0));
  harness::CommClique summing;
  harness::CommClique multiplying;
  ASSERT_NO_FATAL_FAILURE(initClique(&summing));
  ASSERT_NO_FATAL_FAILURE(initClique(&multiplying, GetParam()));
  constexpr int kSums = 8;
  constexpr int kRounds = 10;
  RankBuffers ranks;
  ASSERT_NO_FATAL_FAILURE(ranks.make());
  const std::vector<cudaStream_t>& streams = ranks.streams;
  const std::vector<float*>& buffers = ranks.buffers;
  // Rank r holds r + 1: the first sum gives 3, each later one doubles, and the product squares.
  const float sums = 3.0f * static_cast<float>(1 << (kSums - 1));
  const float expected = sums * sums;
  for (int round = 0; round < kRounds; ++round) {
    ASSERT_NO_FATAL_FAILURE(ranks.fillWithRankPlusOne());
    ASSERT_TRUE(succeededOrInProgress(harness::runGrouped(summing.comms(), [&](int r, ncclComm_t comm) {
      for (int sum = 0; sum < kSums; ++sum) {
        const ncclResult_t result =
            ncclAllReduce(buffers[r], buffers[r], kCount, ncclFloat32, ncclSum, comm, streams[r]);
        if (result != ncclSuccess && result != ncclInProgress) return result;
      }
      return ncclSuccess;
    })));
    ASSERT_TRUE(succeededOrInProgress(harness::runGrouped(multiplying.comms(), [&](int r, ncclComm_t comm) {
      return ncclAllReduce(buffers[r], buffers[r], kCount, ncclFloat32, ncclProd, comm, streams[r]);
    })));
    for (int r = 0; r < kRanks; ++r) {
      ASSERT_TRUE(ncclSucceeded(harness::settledState(summing[r]))) << "sums of rank " << r;
      ASSERT_TRUE(ncclSucceeded(harness::settledState(multiplying[r]))) << "product of rank " << r;
    }
    for (int r = 0; r < kRanks; ++r) {
      std::vector<float> got;
      ASSERT_NO_FATAL_FAILURE(ranks.read(r, &got));
      for (size_t i = 0; i < kCount; ++i) {
        ASSERT_EQ(got[i], expected) << "round " << round << ", rank " << r << ", element " << i
                                    << ": the product was enqueued before the sums";
      }
    }
  }
  summing = harness::CommClique();  // the communicators go before their buffers
  multiplying = harness::CommClique();
  ranks.free();
}

// A launch that waits for its peers (here WEFT_CHECK's comparison of the calls) holds up no later
// call of its thread on its streams, though the thread drives the very peer it waits for: the
// blocking group of the other communicator goes ahead of it, on both ranks alike (so the sums
// agree), and returns. (NCCL would have one thread call its ranks in a group; this one does not.)
TEST(GpuNonblocking, ALaunchWaitingForItsPeersHoldsUpNoLaterCallOfItsThread) {
  SKIP_WITHOUT_GPU();
  harness::DeadlineGuard guard(kDeadline, "a later call of the thread while a launch waits for its peers");
  ASSERT_CUDA(cudaSetDevice(0));
  harness::CommClique checked;
  {
    harness::ScopedEnv check("WEFT_CHECK", "1");
    ASSERT_NO_FATAL_FAILURE(initClique(&checked));
  }
  harness::CommClique blocking;
  ASSERT_NO_FATAL_FAILURE(initClique(&blocking, true));
  RankBuffers ranks;
  ASSERT_NO_FATAL_FAILURE(ranks.make());
  ASSERT_NO_FATAL_FAILURE(ranks.fillWithRankPlusOne());
  const std::vector<cudaStream_t>& streams = ranks.streams;
  const std::vector<float*>& buffers = ranks.buffers;
  const auto sum = [&](int r, ncclComm_t comm) {
    return ncclAllReduce(buffers[r], buffers[r], kCount, ncclFloat32, ncclSum, comm, streams[r]);
  };
  // Rank 0's launch compares its call with rank 1's, which this thread makes last.
  ASSERT_TRUE(succeededOrInProgress(sum(0, checked[0])));
  ASSERT_TRUE(ncclSucceeded(harness::runGrouped(blocking.comms(), sum)));
  ASSERT_TRUE(succeededOrInProgress(sum(1, checked[1])));
  for (int r = 0; r < kRanks; ++r) ASSERT_TRUE(ncclSucceeded(harness::settledState(checked[r]))) << "rank " << r;
  // 1 + 2 = 3, then 3 + 3 = 6.
  for (int r = 0; r < kRanks; ++r) {
    std::vector<float> got;
    ASSERT_NO_FATAL_FAILURE(ranks.read(r, &got));
    for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(got[i], 6.0f) << "rank " << r << " element " << i;
  }
  checked = harness::CommClique();  // the communicators go before their buffers
  blocking = harness::CommClique();
  ranks.free();
}

INSTANTIATE_TEST_SUITE_P(SecondNonblockingOrBlocking, GpuLaunchOrder, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? std::string("thenBlocking") : std::string("thenNonblocking");
                         });

}  // namespace
}  // namespace weft::gpu_tests
