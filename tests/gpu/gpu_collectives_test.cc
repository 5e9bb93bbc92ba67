// Exact results of every collective on GPU buffers, ranks sharing one GPU: as threads of this
// process (whose allreduces take the direct kernel unless a case asks for the ring) and as forked
// processes, on one host or on hosts simulated with NCCL_HOSTID (where the network proxy carries
// the data over sockets); small calls with LL pieces and large ones with Simple, or as a case's
// NCCL_PROTO says; with NCCL_MAX_CTAS below their lanes, all-to-all, gather, scatter and
// Send/Recv groups fold their lanes into fewer blocks. Through the same checks as the host suite
// (tests/multirank/collective_run.h): each rank's buffers are copied into device memory, the call
// is enqueued on the rank's own stream, and the results are copied back and compared element by
// element. Skipped, saying so, where no GPU is present.

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "nccl.h"
#include "tests/gpu/device_placement.h"
#include "tests/gpu/gpu_presence.h"
#include "tests/harness/rank_check.h"
#include "tests/harness/rank_runner.h"
#include "tests/harness/scoped_env.h"
#include "tests/multirank/collective.h"
#include "tests/multirank/collective_run.h"
#include "tests/multirank/element_types.h"
#include "tests/multirank/reduction.h"
#include "tests/multirank/test_inputs.h"

namespace weft::gpu_tests {
namespace {

using harness::RankMode;
using harness::RankRunOptions;
using harness::ScopedComm;
using multirank::Collective;
using multirank::CollectiveRun;
using multirank::ElementType;
using multirank::Placement;
using multirank::Reduction;

constexpr size_t kCounts[] = {0, 1, 7, 4099};
// Ranks as processes share the GPU by time slices, and every call waits for copies: they run a
// smaller matrix (the threads' cases check the arithmetic; these, CUDA IPC and the proxy). Across
// simulated hosts, count 0 too: no kernel, so nothing for the proxy, on every rank alike.
constexpr size_t kProcessCounts[] = {1, 4099};
constexpr size_t kProcessCountsAcrossHosts[] = {0, 1, 4099};
// (double: 4099 elements span more than 8 pieces of the folded lanes' cases, below.)
constexpr ncclDataType_t kProcessTypes[] = {ncclInt8, ncclFloat16, ncclBfloat16, ncclFloat32, ncclFloat64};
// Several slots' worth (slots are NCCL_BUFFSIZE / 8 = 512 KiB): many pieces and rounds.
constexpr size_t kLargeCount = (size_t{1} << 20) + 3;
constexpr ncclDataType_t kLargeTypes[] = {ncclInt8, ncclBfloat16, ncclFloat32, ncclFloat64};
constexpr uint64_t kSeed = 0x6b0f5eed1234ULL;
const std::chrono::seconds kDeadline = gpuTestDeadline(std::chrono::seconds{240});

struct GpuCase {
  Collective collective;
  int nranks;
  RankMode mode;
  bool large;
  int hosts = 1;  // more than 1: rank r's NCCL_HOSTID is r mod hosts (processes only)
  // An allreduce of threads on one GPU through the ring (WEFT_GPU_DIRECT=0) rather than the
  // direct kernel that such ranks take by default.
  bool ring = false;
  // NCCL_PROTO for the case ("Simple", "LL"; then allreduces take the ring too). Unset: small
  // calls move LL pieces and large ones Simple (WEFT_GPU_LL_MAX_BYTES) on one host.
  const char* proto = nullptr;
  // NCCL_MAX_CTAS for the case (0: unset): the most blocks of a launch, so that an all-to-all's or
  // a Send/Recv group's lanes are folded into fewer blocks (src/device/block_plan.h).
  int maxCtas = 0;
};

std::string caseName(const ::testing::TestParamInfo<GpuCase>& info) {
  const GpuCase& c = info.param;
  return std::string(multirank::collectiveName(c.collective)) + "_" + std::to_string(c.nranks) + "ranks_" +
         (c.mode == RankMode::kThreads ? "threads" : "processes") + (c.large ? "_large" : "") +
         (c.hosts > 1 ? "_" + std::to_string(c.hosts) + "hosts" : "") + (c.ring ? "_ring" : "") +
         (c.proto != nullptr ? std::string("_") + c.proto : "") +
         (c.maxCtas > 0 ? "_maxCtas" + std::to_string(c.maxCtas) : "");
}

// Makes device 0 current and gives the rank a stream of its own (ranks of one GPU must not share
// one: their kernels wait for each other). The device's pool of stream-ordered allocations keeps
// what is freed, rather than returning it at every synchronisation.
struct RankStream {
  cudaStream_t stream = nullptr;
  cudaError_t error = cudaSuccess;
  RankStream() {
    error = cudaSetDevice(0);
    cudaMemPool_t pool = nullptr;
    if (error == cudaSuccess) error = cudaDeviceGetDefaultMemPool(&pool, 0);
    uint64_t keepEverything = UINT64_MAX;
    if (error == cudaSuccess) error = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keepEverything);
    if (error == cudaSuccess) error = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  }
  ~RankStream() {
    if (stream != nullptr) (void)cudaStreamDestroy(stream);
  }
};

void runCase(const GpuCase& c, int nranks, int rank, const ncclUniqueId& id) {
  if (c.hosts > 1) setenv("NCCL_HOSTID", ("weft-gpu-host-" + std::to_string(rank % c.hosts)).c_str(), 1);
  RankStream rankStream;
  RANK_CHECK(rankStream.error == cudaSuccess) << "CUDA setup: " << cudaGetErrorString(rankStream.error);
  ScopedComm comm;
  RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
  DevicePlacement placement(rankStream.stream, c.mode == RankMode::kThreads ? comm.get() : nullptr);
  const bool smaller = c.mode == RankMode::kProcesses && !c.large;  // kProcessCounts
  std::vector<const ElementType*> types;
  if (c.large) {
    for (ncclDataType_t type : kLargeTypes) types.push_back(&multirank::elementType(type));
  } else if (smaller) {
    for (ncclDataType_t type : kProcessTypes) types.push_back(&multirank::elementType(type));
  } else {
    for (const ElementType& type : multirank::allElementTypes()) types.push_back(&type);
  }
  std::vector<size_t> counts(std::begin(kCounts), std::end(kCounts));
  if (c.large) {
    counts = {kLargeCount};
  } else if (smaller && c.hosts > 1) {
    counts.assign(std::begin(kProcessCountsAcrossHosts), std::end(kProcessCountsAcrossHosts));
  } else if (smaller) {
    counts.assign(std::begin(kProcessCounts), std::end(kProcessCounts));
  }
  std::vector<int> roots = {0};
  if (multirank::hasRoot(c.collective)) roots = {0, nranks - 1};
  uint64_t iteration = 0;
  for (const ElementType* type : types) {
    std::vector<Reduction> reductions = {Reduction{}};
    if (multirank::reduces(c.collective)) {
      reductions = c.large || smaller ? multirank::largeReductionsFor(*type) : multirank::allReductionsFor(*type);
    }
    for (const Reduction& reduction : reductions) {
      for (size_t count : counts) {
        for (Placement placement_ : multirank::placementsOf(c.collective)) {
          for (int root : roots) {
            CollectiveRun run;
            run.collective = c.collective;
            run.type = type;
            run.op = reduction;
            run.count = count;
            run.placement = placement_;
            run.root = root;
            run.seed = multirank::mixBits(kSeed, iteration++, static_cast<uint64_t>(c.collective));
            harness::noteRankProgress(run.describe() + " on GPU buffers");
            multirank::runAndCheck(comm, nranks, rank, run, &placement);
            if (harness::rankFailed()) return;
          }
        }
      }
    }
  }
}

class GpuCollective : public ::testing::TestWithParam<GpuCase> {};

TEST_P(GpuCollective, MatchesReference) {
  SKIP_WITHOUT_GPU();
  const GpuCase c = GetParam();
  if (c.mode == RankMode::kProcesses) {
    ASSERT_CUDA_NOT_STARTED_HERE();
  }
  harness::ScopedEnv direct("WEFT_GPU_DIRECT", c.ring || c.proto != nullptr ? "0" : "1");
  harness::ScopedEnv proto("NCCL_PROTO", c.proto);
  const std::string maxCtas = std::to_string(c.maxCtas);
  harness::ScopedEnv ctas("NCCL_MAX_CTAS", c.maxCtas > 0 ? maxCtas.c_str() : nullptr);
  // Folded lanes with slots of 4 KiB (the least): the small counts' lanes of 8-byte types (4099
  // elements, 9 pieces) then span more pieces than a window of 8, so that they are cut into
  // segments, through the proxy too.
  harness::ScopedEnv slots("NCCL_BUFFSIZE", c.maxCtas > 0 ? "32768" : nullptr);
  RankRunOptions options;
  options.nranks = c.nranks;
  options.mode = c.mode;
  options.deadline = kDeadline;
  options.label = std::string(multirank::collectiveName(c.collective)) + " on GPU buffers";
  EXPECT_TRUE(harness::runRanks(options, [&c](int rank, int nranks, const ncclUniqueId& id) {
    runCase(c, nranks, rank, id);
  }));
}

std::vector<GpuCase> cases() {
  std::vector<GpuCase> all;
  for (Collective collective : multirank::allCollectives()) {
    for (int nranks : {1, 2, 3, 4}) all.push_back({collective, nranks, RankMode::kThreads, false});
    all.push_back({collective, 4, RankMode::kThreads, true});
    // As processes: CUDA IPC within a host, and across two hosts one rank each (no CUDA IPC).
    all.push_back({collective, 2, RankMode::kProcesses, false});
    all.push_back({collective, 2, RankMode::kProcesses, false, 2});
  }
  // More processes for a few collectives: 3 on one host; 2 on each of two hosts (CUDA IPC within,
  // the proxy between); large across two hosts. A ring of Send/Recv between 3 processes.
  for (Collective collective :
       {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter, Collective::kBroadcast}) {
    all.push_back({collective, 3, RankMode::kProcesses, false});
    all.push_back({collective, 4, RankMode::kProcesses, false, 2});
  }
  all.push_back({Collective::kSendRecvRing, 3, RankMode::kProcesses, false});
  for (Collective collective : {Collective::kAllReduce, Collective::kAllGather}) {
    all.push_back({collective, 2, RankMode::kProcesses, true, 2});
  }
  // Large on one host: CUDA IPC slots reused round after round (the small counts fit one slot).
  all.push_back({Collective::kAllReduce, 2, RankMode::kProcesses, true});
  for (Collective collective : multirank::allCollectives()) {
    all.push_back({collective, 3, RankMode::kThreads, false, 1, false, "Simple"});
  }
  // Lanes folded into one or two blocks: small and large on one GPU, and through the proxy.
  for (Collective collective :
       {Collective::kAlltoAll, Collective::kGather, Collective::kScatter, Collective::kSendRecvAllPairs}) {
    all.push_back({collective, 4, RankMode::kThreads, false, 1, false, nullptr, 1});
    all.push_back({collective, 4, RankMode::kThreads, true, 1, false, nullptr, 2});
  }
  for (Collective collective : {Collective::kAlltoAll, Collective::kSendRecvAllPairs}) {
    all.push_back({collective, 4, RankMode::kProcesses, false, 2, false, nullptr, 1});
  }
  // 8 ranks on one GPU get 8 blocks each (half of an H200, src/device/residency.h): an
  // all-to-all's 14 lanes are folded without NCCL_MAX_CTAS.
  all.push_back({Collective::kAlltoAll, 8, RankMode::kThreads, false});
  all.push_back({Collective::kAllReduce, 8, RankMode::kThreads, false});  // the direct kernel's most ranks
  all.push_back({Collective::kAllReduce, 3, RankMode::kThreads, false, 1, true});
  all.push_back({Collective::kAllReduce, 2, RankMode::kThreads, true, 1, true});
  all.push_back({Collective::kAllReduce, 2, RankMode::kThreads, true, 1, false, "LL"});
  all.push_back({Collective::kAllGather, 2, RankMode::kThreads, true, 1, false, "LL"});
  return all;
}

INSTANTIATE_TEST_SUITE_P(Collectives, GpuCollective, ::testing::ValuesIn(cases()), caseName);

}  // namespace
}  // namespace weft::gpu_tests
