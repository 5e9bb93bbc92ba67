// GPU buffers between hosts (simulated with NCCL_HOSTID, ranks as processes sharing one GPU): the
// network proxy carries the kernels' slots over sockets. When the other host is lost mid-call,
// the waiting kernel must end and the communicator report the error, never hang.

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "nccl.h"
#include "tests/gpu/gpu_presence.h"
#include "tests/reliability/killable_ranks.h"

namespace weft::gpu_tests {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kCount = 1 << 20;
// Generous: the proxy sees the closed socket within milliseconds.
constexpr auto kReportLimit = std::chrono::seconds(20);

// Exit codes of the surviving rank, each naming what went wrong.
enum Outcome : int {
  kReported = 0,
  kSetupFailed = 10,
  kFirstCallFailed = 11,
  kNoAsyncError = 12,
  kKernelStillRunning = 13,
  kAbortFailed = 14,
};

int survivor(const ncclUniqueId& id, int nranks) {
  float* buffer = nullptr;
  cudaStream_t stream = nullptr;
  ncclComm_t comm = nullptr;
  if (cudaSetDevice(0) != cudaSuccess || cudaMalloc(&buffer, kCount * sizeof(float)) != cudaSuccess ||
      cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess ||
      ncclCommInitRank(&comm, nranks, id, 0) != ncclSuccess) {
    return kSetupFailed;
  }
  // One call with the peer makes the connections; the second waits for a peer that is gone.
  if (ncclAllReduce(buffer, buffer, kCount, ncclFloat32, ncclSum, comm, stream) != ncclSuccess ||
      cudaStreamSynchronize(stream) != cudaSuccess) {
    return kFirstCallFailed;
  }
  (void)ncclAllReduce(buffer, buffer, kCount, ncclFloat32, ncclSum, comm, stream);
  const auto deadline = Clock::now() + kReportLimit;
  ncclResult_t asyncError = ncclSuccess;
  while (asyncError == ncclSuccess && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    (void)ncclCommGetAsyncError(comm, &asyncError);
  }
  if (asyncError == ncclSuccess || asyncError == ncclInProgress) return kNoAsyncError;
  // The kernel gave up: the stream drains.
  while (cudaStreamQuery(stream) == cudaErrorNotReady && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (cudaStreamQuery(stream) == cudaErrorNotReady) return kKernelStillRunning;
  if (ncclCommAbort(comm) != ncclSuccess) return kAbortFailed;
  return kReported;
}

TEST(GpuAcrossHosts, ALostHostEndsTheWaitingKernelWithAnAsyncError) {
  SKIP_WITHOUT_GPU();
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  const std::vector<pid_t> ranks = reliability::forkKillableRanks(2, id, [](int rank, const ncclUniqueId& id) {
    setenv("NCCL_HOSTID", ("weft-gpu-host-" + std::to_string(rank)).c_str(), 1);
    if (rank == 0) return survivor(id, 2);
    float* buffer = nullptr;
    cudaStream_t stream = nullptr;
    ncclComm_t comm = nullptr;
    if (cudaSetDevice(0) != cudaSuccess || cudaMalloc(&buffer, kCount * sizeof(float)) != cudaSuccess ||
        cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess ||
        ncclCommInitRank(&comm, 2, id, 1) != ncclSuccess) {
      return static_cast<int>(kSetupFailed);
    }
    if (ncclAllReduce(buffer, buffer, kCount, ncclFloat32, ncclSum, comm, stream) != ncclSuccess ||
        cudaStreamSynchronize(stream) != cudaSuccess) {
      return static_cast<int>(kFirstCallFailed);
    }
    _exit(0);  // the host is lost: no destroy, no second call
  });
  ASSERT_EQ(ranks.size(), 2u);
  const int lost = reliability::waitForRank(ranks[1]);
  const int survived = reliability::waitForRank(ranks[0]);
  EXPECT_TRUE(WIFEXITED(lost) && WEXITSTATUS(lost) == 0) << "the lost rank's first call failed: status " << lost;
  ASSERT_TRUE(WIFEXITED(survived)) << "the surviving rank died: status " << survived;
  EXPECT_EQ(WEXITSTATUS(survived), kReported)
      << "10: setup failed, 11: the first call failed, 12: no async error within the limit, 13: the kernel still "
         "ran, 14: abort failed";
}

}  // namespace
}  // namespace weft::gpu_tests
