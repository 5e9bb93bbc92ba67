// CUDA graph capture with ranks as processes sharing one GPU: a first call captured into a graph
// makes the communicator's GPU resources and connections at that call (outside the graph), and
// the replays of ring collectives and Send/Recv are exact, through CUDA IPC on one host and
// through the network proxy between hosts (simulated with NCCL_HOSTID). Skipped, saying so, where
// no GPU is present.

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "nccl.h"
#include "tests/gpu/gpu_presence.h"
#include "tests/harness/rank_check.h"
#include "tests/harness/rank_runner.h"

namespace weft::gpu_tests {
namespace {

using harness::RankMode;
using harness::RankRunOptions;
using harness::ScopedComm;

constexpr size_t kCount = 40961;

// A rank's stream on GPU 0 and its buffers of floats: values, the all-gathered first parts of
// every rank's values, and what its left neighbour sent.
struct RankBuffers {
  cudaStream_t stream = nullptr;
  float* values = nullptr;
  float* gathered = nullptr;
  float* received = nullptr;
  cudaError_t error = cudaSuccess;

  explicit RankBuffers(int nranks) {
    error = cudaSetDevice(0);
    if (error == cudaSuccess) error = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    if (error == cudaSuccess) error = cudaMalloc(&values, kCount * sizeof(float));
    if (error == cudaSuccess) error = cudaMalloc(&gathered, kCount * sizeof(float) * nranks);
    if (error == cudaSuccess) error = cudaMalloc(&received, kCount * sizeof(float));
  }
  ~RankBuffers() {
    if (stream != nullptr) (void)cudaStreamSynchronize(stream);
    for (float* buffer : {values, gathered, received}) (void)cudaFree(buffer);
    if (stream != nullptr) (void)cudaStreamDestroy(stream);
  }

  // On the stream, so ordered before what follows there.
  cudaError_t fill(float value) {
    std::vector<float> host(kCount, value);
    return cudaMemcpyAsync(values, host.data(), kCount * sizeof(float), cudaMemcpyHostToDevice, stream);
  }

  // The first `count` elements of `buffer` (after the stream's work) are all `want`; else
  // the first that is not, in *why.
  bool holds(const float* buffer, size_t count, float want, std::string* why) {
    std::vector<float> host(count);
    cudaError_t copied = cudaStreamSynchronize(stream);
    if (copied == cudaSuccess) copied = cudaMemcpy(host.data(), buffer, count * sizeof(float), cudaMemcpyDeviceToHost);
    if (copied != cudaSuccess) {
      *why = std::string("reading back: ") + cudaGetErrorString(copied);
      return false;
    }
    for (size_t i = 0; i < count; ++i) {
      if (host[i] != want) {
        *why = "element " + std::to_string(i) + " is " + std::to_string(host[i]) + ", not " + std::to_string(want);
        return false;
      }
    }
    return true;
  }
};

// Rank `rank` on host rank % hosts (NCCL_HOSTID; 1: the real host).
void replayRank(int rank, int nranks, const ncclUniqueId& id, int hosts) {
  if (hosts > 1) setenv("NCCL_HOSTID", ("weft-graph-host-" + std::to_string(rank % hosts)).c_str(), 1);
  RankBuffers buffers(nranks);
  RANK_CHECK(buffers.error == cudaSuccess) << "CUDA setup: " << cudaGetErrorString(buffers.error);
  ScopedComm comm;
  RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
  RANK_CHECK(buffers.fill(static_cast<float>(rank + 1)) == cudaSuccess);
  const size_t part = kCount / nranks;
  RANK_CHECK(cudaStreamBeginCapture(buffers.stream, cudaStreamCaptureModeGlobal) == cudaSuccess);
  const ncclResult_t reduced =
      ncclAllReduce(buffers.values, buffers.values, kCount, ncclFloat32, ncclSum, comm, buffers.stream);
  const ncclResult_t gathered =
      ncclAllGather(buffers.values, buffers.gathered, part, ncclFloat32, comm, buffers.stream);
  ncclResult_t shifted = ncclGroupStart();
  if (shifted == ncclSuccess) {
    shifted = ncclSend(buffers.values, kCount, ncclFloat32, (rank + 1) % nranks, comm, buffers.stream);
  }
  if (shifted == ncclSuccess) {
    shifted = ncclRecv(buffers.received, kCount, ncclFloat32, (rank + nranks - 1) % nranks, comm, buffers.stream);
  }
  const ncclResult_t grouped = ncclGroupEnd();
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(buffers.stream, &graph);
  RANK_CHECK_NCCL(reduced);
  RANK_CHECK_NCCL(gathered);
  RANK_CHECK_NCCL(shifted);
  RANK_CHECK_NCCL(grouped);
  RANK_CHECK(ended == cudaSuccess) << cudaGetErrorString(ended);
  cudaGraphExec_t exec = nullptr;
  const cudaError_t instantiated = cudaGraphInstantiate(&exec, graph, 0);
  (void)cudaGraphDestroy(graph);
  RANK_CHECK(instantiated == cudaSuccess) << cudaGetErrorString(instantiated);
  cudaError_t launched = cudaSuccess;
  for (int replay = 0; replay < 3 && launched == cudaSuccess; ++replay) {
    launched = cudaGraphLaunch(exec, buffers.stream);
  }
  RANK_CHECK(launched == cudaSuccess) << cudaGetErrorString(launched);
  // The sum of 1 to n, times n at each replay after the first.
  float want = static_cast<float>(nranks * (nranks + 1) / 2);
  for (int replay = 1; replay < 3; ++replay) want *= static_cast<float>(nranks);
  std::string why;
  RANK_CHECK(buffers.holds(buffers.values, kCount, want, &why)) << "allreduce: " << why;
  RANK_CHECK(buffers.holds(buffers.gathered, part * nranks, want, &why)) << "allgather: " << why;
  RANK_CHECK(buffers.holds(buffers.received, kCount, want, &why)) << "receive: " << why;
  RANK_CHECK(cudaGraphExecDestroy(exec) == cudaSuccess);
}

RankRunOptions processes(int nranks, const char* label) {
  RankRunOptions options;
  options.nranks = nranks;
  options.mode = RankMode::kProcesses;
  options.deadline = gpuTestDeadline(std::chrono::seconds(60));
  options.label = label;
  return options;
}

// The names end as the parameterized suites' do, so that the GPU check runs these with the other
// tests of ranks as processes (and the second also where CUDA IPC across processes fails).
TEST(CapturedGraph, RingCollectivesAndSendRecvReplayExactly_3ranks_processes) {
  SKIP_WITHOUT_GPU();
  ASSERT_CUDA_NOT_STARTED_HERE();
  EXPECT_TRUE(harness::runRanks(processes(3, "graph replays, 3 ranks as processes"),
                                [](int rank, int nranks, const ncclUniqueId& id) { replayRank(rank, nranks, id, 1); }));
}

// Each rank a host of its own: the network proxy learns of each replay's pieces from a host node
// of the graph.
TEST(CapturedGraph, RingCollectivesAndSendRecvReplayExactly_2ranks_processes_2hosts) {
  SKIP_WITHOUT_GPU();
  ASSERT_CUDA_NOT_STARTED_HERE();
  EXPECT_TRUE(harness::runRanks(processes(2, "graph replays, 2 ranks as processes on 2 hosts"),
                                [](int rank, int nranks, const ncclUniqueId& id) { replayRank(rank, nranks, id, 2); }));
}

}  // namespace
}  // namespace weft::gpu_tests
