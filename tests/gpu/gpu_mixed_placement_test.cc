// Ranks placed as two processes of two threads each, all four on GPU 0: such a communicator makes
// its GPU resources and every connection at init, once the ranks have agreed that every rank can
// (src/device/setup_at_init.h), as each rank's INFO log says. Its calls then move data through
// direct pointers within a process and CUDA IPC between the two, and are right. Skipped, saying
// so, where no GPU is present.

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "nccl.h"
#include "tests/gpu/gpu_presence.h"
#include "tests/harness/rank_check.h"
#include "tests/harness/rank_runner.h"
#include "tests/harness/temp_dir.h"

namespace weft::gpu_tests {
namespace {

using harness::RankMode;
using harness::RankRecord;
using harness::RankRunOptions;
using harness::RankScope;
using harness::ScopedComm;

constexpr int kProcesses = 2;
constexpr int kThreadsPerProcess = 2;
constexpr int kRanks = kProcesses * kThreadsPerProcess;
constexpr size_t kCount = 4099;
const std::chrono::seconds kDeadline = gpuTestDeadline(std::chrono::seconds{120});

// Checks a CUDA runtime call inside a rank function, returning from it on failure.
#define RANK_CHECK_CUDA(call)                                                          \
  do {                                                                                 \
    const cudaError_t error_ = (call);                                                 \
    RANK_CHECK(error_ == cudaSuccess) << #call << ": " << cudaGetErrorString(error_); \
  } while (0)

// Copies `count` floats at `device` into *out, on `stream`, and waits.
void copyBack(const float* device, size_t count, cudaStream_t stream, std::vector<float>* out) {
  out->assign(count, 0.0f);
  RANK_CHECK_CUDA(cudaMemcpyAsync(out->data(), device, count * sizeof(float), cudaMemcpyDeviceToHost, stream));
  RANK_CHECK_CUDA(cudaStreamSynchronize(stream));
}

// One rank, a thread of its process. Its buffers are filled before init: no rank's kernel can
// run before every rank has finished init, so none waits behind these copies.
void runRank(int rank, const ncclUniqueId& id) {
  RANK_CHECK_CUDA(cudaSetDevice(0));
  cudaStream_t stream = nullptr;
  RANK_CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  float* summed = nullptr;
  float* gathered = nullptr;
  RANK_CHECK_CUDA(cudaMalloc(&summed, kCount * sizeof(float)));
  RANK_CHECK_CUDA(cudaMalloc(&gathered, kRanks * kCount * sizeof(float)));
  const std::vector<float> mine(kCount, static_cast<float>(rank + 1));
  RANK_CHECK_CUDA(cudaMemcpyAsync(summed, mine.data(), kCount * sizeof(float), cudaMemcpyHostToDevice, stream));
  RANK_CHECK_CUDA(cudaStreamSynchronize(stream));
  {
    ScopedComm comm;
    RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), kRanks, id, rank));
    // Each rank's block of the allgather is its input, before the sum overwrites it.
    RANK_CHECK_NCCL(ncclAllGather(summed, gathered, kCount, ncclFloat32, comm, stream));
    RANK_CHECK_NCCL(ncclAllReduce(summed, summed, kCount, ncclFloat32, ncclSum, comm, stream));
    std::vector<float> got;
    copyBack(summed, kCount, stream, &got);
    const float sum = kRanks * (kRanks + 1) / 2.0f;
    for (size_t i = 0; i < kCount; ++i) RANK_CHECK(got[i] == sum) << "allreduce element " << i << ": " << got[i];
    copyBack(gathered, kRanks * kCount, stream, &got);
    for (size_t i = 0; i < got.size(); ++i) {
      const float want = static_cast<float>(i / kCount + 1);
      RANK_CHECK(got[i] == want) << "allgather element " << i << ": " << got[i] << ", not " << want;
    }
  }
  (void)cudaFree(summed);
  (void)cudaFree(gathered);
  (void)cudaStreamDestroy(stream);
}

// How many times `text` occurs in the files of `folder`.
size_t occurrences(const std::filesystem::path& folder, const std::string& text) {
  size_t count = 0;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(folder, error)) {
    const std::string log = harness::readWholeFile(entry.path());
    for (size_t at = log.find(text); at != std::string::npos; at = log.find(text, at + text.size())) ++count;
  }
  return count;
}

TEST(GpuMixedPlacement, TwoProcessesOfTwoThreadsEachConnectAtInitAndAreRight) {
  SKIP_WITHOUT_GPU();
  harness::TempDir logs("weft-mixed-placement-");
  ASSERT_FALSE(logs.path.empty());
  RankRunOptions options;
  options.nranks = kProcesses;
  options.mode = RankMode::kProcesses;
  options.deadline = kDeadline;
  options.label = "two processes of two threads on one GPU";
  options.env = {{"NCCL_DEBUG", "INFO"},
                 {"NCCL_DEBUG_SUBSYS", "INIT"},
                 {"NCCL_DEBUG_FILE", (logs.path / "process.%p").string()}};
  EXPECT_TRUE(harness::runRanks(options, [](int process, int, const ncclUniqueId& id) {
    // Each thread records into a rank of its own, and passes its first failure on to the process,
    // which tells the runner at once (its peers, waiting for it, are then ended).
    RankRecord* processRecord = harness::currentRankRecord();
    std::vector<std::unique_ptr<RankRecord>> records;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreadsPerProcess; ++t) {
      const int rank = process * kThreadsPerProcess + t;
      records.push_back(std::make_unique<RankRecord>(
          rank, [processRecord](const std::string& failure) { processRecord->addFailure(failure); }));
      threads.emplace_back([rank, &id, record = records.back().get()] {
        RankScope scope(record);
        runRank(rank, id);
      });
    }
    for (std::thread& thread : threads) thread.join();
  }));
  EXPECT_EQ(occurrences(logs.path, "made at init"), size_t{kRanks}) << "every rank connects at init";
}

}  // namespace
}  // namespace weft::gpu_tests
