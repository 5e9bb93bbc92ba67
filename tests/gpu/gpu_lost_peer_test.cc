// A peer lost while a kernel waits for it, ranks as processes sharing one GPU: the waiting kernel
// must end and the communicator report the error, never hang. On another host (simulated with
// NCCL_HOSTID, the network proxy carrying the kernels' slots over sockets), the proxy sees the
// socket close (and the peer watch too); on this host (CUDA IPC), only the peer watch, which sees
// the process end.

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
  kStreamFailed = 16,
};

struct Rank {
  float* buffer = nullptr;
  cudaStream_t stream = nullptr;
  ncclComm_t comm = nullptr;
};

// Joins the communicator as `rank` (on a host of its own where `ownHost`) and makes one allreduce
// with the peer (which makes the connections). kReported when both went well.
int joinAndCallOnce(const ncclUniqueId& id, int rank, bool ownHost, Rank* self) {
  if (ownHost) setenv("NCCL_HOSTID", ("weft-gpu-host-" + std::to_string(rank)).c_str(), 1);
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
int survivor(const ncclUniqueId& id, bool ownHost, int goFd) {
  Rank self;
  if (int outcome = joinAndCallOnce(id, 0, ownHost, &self); outcome != kReported) return outcome;
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
  if (asyncError != ncclRemoteError) return kNoAsyncError;
  while (cudaStreamQuery(self.stream) == cudaErrorNotReady && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const cudaError_t stream = cudaStreamQuery(self.stream);
  if (stream == cudaErrorNotReady) return kKernelStillRunning;
  if (stream != cudaSuccess) return kStreamFailed;
  if (ncclCommAbort(self.comm) != ncclSuccess) return kAbortFailed;
  return kReported;
}

// Rank 1 makes one call with rank 0 and leaves (no destroy, no second call) once rank 0's second
// call is enqueued; rank 0 must see its kernel end and the error reported (survivor).
void loseAPeerWhileItsKernelWaits(bool ownHost) {
  ASSERT_CUDA_NOT_STARTED_HERE();
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  const std::vector<pid_t> ranks =
      reliability::forkKillableRanks(2, id, [&go, ownHost](int rank, const ncclUniqueId& id) {
        if (rank == 0) {
          close(go[0]);
          return survivor(id, ownHost, go[1]);
        }
        close(go[1]);
        Rank self;
        if (int outcome = joinAndCallOnce(id, 1, ownHost, &self); outcome != kReported) return outcome;
        char signal = 0;
        (void)read(go[0], &signal, 1);  // rank 0's second call is enqueued (or rank 0 is gone)
        _exit(0);  // the peer is lost: no destroy, no second call
        return 0;
      });
  close(go[0]);
  close(go[1]);
  ASSERT_EQ(ranks.size(), 2u) << "fork failed";
  const std::vector<int> statuses = reliability::waitForRanksWithin(ranks, gpuTestDeadline(std::chrono::seconds(60)));
  const int survived = statuses[0];
  const int lost = statuses[1];
  ASSERT_NE(survived, reliability::kStillRunning) << "the surviving rank (0) was still running at the test's limit";
  ASSERT_NE(lost, reliability::kStillRunning) << "the rank to be lost (1) hung in its setup or first call";
  EXPECT_TRUE(WIFEXITED(lost) && WEXITSTATUS(lost) == 0) << "the lost rank's first call failed: status " << lost;
  ASSERT_TRUE(WIFEXITED(survived)) << "the surviving rank died: status " << survived;
  EXPECT_EQ(WEXITSTATUS(survived), kReported)
      << "10: setup failed, 11: the first call failed, 12: the second call was refused, 13: no ncclRemoteError "
         "within the limit, 14: the kernel still ran, 15: abort failed, 16: the stream failed";
}

TEST(GpuLostPeer, ALostHostEndsTheWaitingKernelWithAnAsyncError) {
  SKIP_WITHOUT_GPU();
  ASSERT_NO_FATAL_FAILURE(loseAPeerWhileItsKernelWaits(true));
}

// Needs CUDA IPC between processes.
TEST(GpuLostPeer, ADeadProcessOnThisHostEndsTheWaitingKernelWithAnAsyncError) {
  SKIP_WITHOUT_GPU();
  ASSERT_NO_FATAL_FAILURE(loseAPeerWhileItsKernelWaits(false));
}

}  // namespace
}  // namespace weft::gpu_tests
