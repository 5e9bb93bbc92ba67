// ncclGroupSimulateEnd: the tuner's estimate of a group, in microseconds, without running it.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "nccl.h"
#include "tests/harness/comm_clique.h"
#include "tests/harness/deadline_guard.h"
#include "tests/harness/rank_check.h"
#include "tests/harness/scoped_env.h"
#include "tests/multirank/transport_env.h"

namespace weft::multirank {
namespace {

using harness::CommClique;
using harness::DeadlineGuard;
using harness::ncclSucceeded;
using harness::ScopedEnv;

constexpr int kRanks = 2;
constexpr std::chrono::seconds kDeadline{60};
constexpr int32_t kUntouched = -7;
const cudaStream_t kStream{};

// Every communicator of `clique` queues an int32 sum allreduce of `count` elements (its receive
// buffer holding kUntouched) in one group, which ncclGroupSimulateEnd closes.
ncclResult_t simulateAllReduce(const CommClique& clique, size_t count, std::vector<std::vector<int32_t>>* recv,
                               ncclSimInfo_t* info) {
  std::vector<std::vector<int32_t>> send(clique.size(), std::vector<int32_t>(count, 1));
  recv->assign(clique.size(), std::vector<int32_t>(count, kUntouched));
  ncclGroupStart();
  for (int r = 0; r < clique.size(); ++r) {
    ncclResult_t result = ncclAllReduce(send[r].data(), (*recv)[r].data(), count, ncclInt32, ncclSum, clique[r], kStream);
    if (result != ncclSuccess) return result;
  }
  return ncclGroupSimulateEnd(info);
}

bool untouched(const std::vector<std::vector<int32_t>>& recv) {
  for (const auto& buffer : recv) {
    for (int32_t value : buffer) {
      if (value != kUntouched) return false;
    }
  }
  return true;
}

TEST(GroupSimulate, EstimatesWithoutRunningAndGrowsWithSize) {
  DeadlineGuard guard(kDeadline, "GroupSimulate.EstimatesWithoutRunningAndGrowsWithSize");
  ScopedEnv env(transportEnv(Transport::kShm));
  CommClique clique;
  ASSERT_TRUE(ncclSucceeded(clique.initAll(kRanks)));
  std::vector<std::vector<int32_t>> recv;
  ncclSimInfo_t small = NCCL_SIM_INFO_INITIALIZER;
  ASSERT_TRUE(ncclSucceeded(simulateAllReduce(clique, 2, &recv, &small)));
  EXPECT_TRUE(untouched(recv)) << "a simulated group must not run";
  ncclSimInfo_t large = NCCL_SIM_INFO_INITIALIZER;
  ASSERT_TRUE(ncclSucceeded(simulateAllReduce(clique, 1 << 20, &recv, &large)));
  EXPECT_TRUE(untouched(recv));
  EXPECT_GT(small.estimatedTime, 0.0f);
  EXPECT_GT(large.estimatedTime, small.estimatedTime * 10) << small.estimatedTime << " us, " << large.estimatedTime;

  // The communicators still run groups that end normally.
  std::vector<int32_t> send0(3, 4), send1(3, 5), out0(3, 0), out1(3, 0);
  ncclGroupStart();
  ncclAllReduce(send0.data(), out0.data(), 3, ncclInt32, ncclSum, clique[0], kStream);
  ncclAllReduce(send1.data(), out1.data(), 3, ncclInt32, ncclSum, clique[1], kStream);
  ASSERT_TRUE(ncclSucceeded(ncclGroupEnd()));
  EXPECT_EQ(out0, std::vector<int32_t>(3, 9));
  EXPECT_EQ(out1, std::vector<int32_t>(3, 9));
}

// A tune file whose shared-memory steps take 1 ms: the 2-rank allreduce of 8 bytes is two steps.
TEST(GroupSimulate, EstimateIsTheTunersInMicroseconds) {
  DeadlineGuard guard(kDeadline, "GroupSimulate.EstimateIsTheTunersInMicroseconds");
  std::vector<harness::EnvVar> vars = transportEnv(Transport::kShm);
  const std::filesystem::path file =
      std::filesystem::path(__FILE__).parent_path() / ".." / "fixtures" / "tune" / "slow-shared-memory.json";
  vars.push_back({"WEFT_TUNE_FILE", file.string()});
  ScopedEnv env(vars);
  CommClique clique;
  ASSERT_TRUE(ncclSucceeded(clique.initAll(kRanks)));
  std::vector<std::vector<int32_t>> recv;
  ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
  ASSERT_TRUE(ncclSucceeded(simulateAllReduce(clique, 2, &recv, &info)));
  EXPECT_NEAR(info.estimatedTime, 2000.0f, 1.0f);
}

TEST(GroupSimulate, MisuseIsRefused) {
  ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
  EXPECT_EQ(ncclGroupSimulateEnd(&info), ncclInvalidUsage) << "without ncclGroupStart";
  ncclGroupStart();
  EXPECT_EQ(ncclGroupSimulateEnd(nullptr), ncclInvalidArgument);
  ncclSimInfo_t uninitialized{};
  EXPECT_EQ(ncclGroupSimulateEnd(&uninitialized), ncclInvalidArgument);
  EXPECT_EQ(ncclGroupSimulateEnd(&info), ncclSuccess) << "the group stayed open for a corrected call";
  EXPECT_EQ(info.estimatedTime, 0.0f) << "an empty group";
}

}  // namespace
}  // namespace weft::multirank
