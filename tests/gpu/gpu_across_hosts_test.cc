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
// Generous: the proxy sees the closed socket within milliseconds. Under the GPU check's 20 s per
// test, so that a late report fails as late, not as a hang.
constexpr auto kReportLimit = std::chrono::seconds(10);

// Exit codes of the ranks, each naming what went wrong.
enum Outcome : int {
  kReported = 0,
  kSetupFailed = 10,
  kFirstCallFailed = 11,
  kSecondCallRefused = 12,
  kNoAsyncError = 13,
  kKernelStillRunning = 14,
  kAbortFailed = 15,
};

struct Rank {
  float* buffer = nullptr;
  cudaStream_t stream = nullptr;
  ncclComm_t comm = nullptr;
};

// Joins the communicator as host `rank` and makes one allreduce with the peer (which makes the
// connections). kReported when both went well.
int joinAndCallOnce(const ncclUniqueId& id, int rank, Rank* self) {
  setenv("NCCL_HOSTID", ("weft-gpu-host-" + std::to_string(rank)).c_str(), 1);
  if (cudaSetDevice(0) != cudaSuccess || cudaMalloc(&self->buffer, kCount * sizeof(float)) != cudaSuccess ||
      cudaStreamCreateWithFlags(&self->stream, cudaStreamNonBlocking) != cudaSuccess ||
      ncclCommInitRank(&self->comm, 2, id, rank) != ncclSuccess) {
    return kSetupFailed;
  }
  if (ncclAllReduce(self->buffer, self->buffer, kCount, ncclFloat32, ncclSum, self->comm, self->stream) !=
          ncclSuccess ||
      cudaStreamSynchronize(self->stream) != cudaSuccess) {
    return kFirstCallFailed;
  }
  return kReported;
}

// Rank 0: enqueues a second allreduce (its kernel waits for rank 1), tells rank 1 to go, and
// expects the error to arrive and the kernel to end.
int survivor(const ncclUniqueId& id, int goFd) {
  Rank self;
  if (int outcome = joinAndCallOnce(id, 0, &self); outcome != kReported) return outcome;
  const ncclResult_t enqueued =
      ncclAllReduce(self.buffer, self.buffer, kCount, ncclFloat32, ncclSum, self.comm, self.stream);
  const char go = 1;
  if (write(goFd, &go, 1) != 1 || enqueued != ncclSuccess) return kSecondCallRefused;
  const auto deadline = Clock::now() + kReportLimit;
  ncclResult_t asyncError = ncclSuccess;
  while (asyncError == ncclSuccess && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    (void)ncclCommGetAsyncError(self.comm, &asyncError);
  }
  if (asyncError == ncclSuccess || asyncError == ncclInProgress) return kNoAsyncError;
  while (cudaStreamQuery(self.stream) == cudaErrorNotReady && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (cudaStreamQuery(self.stream) == cudaErrorNotReady) return kKernelStillRunning;
  if (ncclCommAbort(self.comm) != ncclSuccess) return kAbortFailed;
  return kReported;
}

TEST(GpuAcrossHosts, ALostHostEndsTheWaitingKernelWithAnAsyncError) {
  SKIP_WITHOUT_GPU();
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  const std::vector<pid_t> ranks = reliability::forkKillableRanks(2, id, [&go](int rank, const ncclUniqueId& id) {
    if (rank == 0) {
      close(go[0]);
      return survivor(id, go[1]);
    }
    close(go[1]);
    Rank self;
    if (int outcome = joinAndCallOnce(id, 1, &self); outcome != kReported) return outcome;
    char signal = 0;
    (void)read(go[0], &signal, 1);  // rank 0's second call is enqueued (or rank 0 is gone)
    _exit(0);  // the host is lost: no destroy, no second call
    return 0;
  });
  close(go[0]);
  close(go[1]);
  ASSERT_EQ(ranks.size(), 2u);
  const int lost = reliability::waitForRank(ranks[1]);
  const int survived = reliability::waitForRank(ranks[0]);
  EXPECT_TRUE(WIFEXITED(lost) && WEXITSTATUS(lost) == 0) << "the lost rank's first call failed: status " << lost;
  ASSERT_TRUE(WIFEXITED(survived)) << "the surviving rank died: status " << survived;
  EXPECT_EQ(WEXITSTATUS(survived), kReported)
      << "10: setup failed, 11: the first call failed, 12: the second call was refused, 13: no async error within "
         "the limit, 14: the kernel still ran, 15: abort failed";
}

}  // namespace
}  // namespace weft::gpu_tests
