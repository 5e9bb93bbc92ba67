// Nonblocking communicators (config.blocking = 0, or NCCL_COMM_BLOCKING=0): init, split and
// collectives return ncclInProgress at once and run in the background; ncclCommGetAsyncError says
// when they have ended and how.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "nccl.h"
#include "tests/harness/async_state.h"
#include "tests/harness/deadline_guard.h"
#include "tests/harness/rank_check.h"
#include "tests/harness/rank_runner.h"

namespace weft::multirank {
namespace {

using harness::RankMode;
using harness::RankRunOptions;
using harness::ScopedComm;

ncclConfig_t nonblockingConfig() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

/// The flow of a nonblocking rank: init, one collective, a group of two, a split; all checked.
void nonblockingRank(int rank, int nranks, const ncclUniqueId& id, bool useConfig) {
  ScopedComm comm;
  ncclConfig_t config = nonblockingConfig();
  ncclResult_t result = useConfig ? ncclCommInitRankConfig(comm.out(), nranks, id, rank, &config)
                                  : ncclCommInitRank(comm.out(), nranks, id, rank);
  RANK_CHECK(result == ncclInProgress || result == ncclSuccess);
  RANK_CHECK(harness::settledState(comm) == ncclSuccess);

  std::vector<int> buffer(100003, rank + 1);
  result = ncclAllReduce(buffer.data(), buffer.data(), buffer.size(), ncclInt32, ncclSum, comm, nullptr);
  RANK_CHECK(result == ncclInProgress || result == ncclSuccess);
  RANK_CHECK(harness::settledState(comm) == ncclSuccess);
  const int sum = nranks * (nranks + 1) / 2;
  RANK_EXPECT(buffer.front() == sum && buffer.back() == sum);

  std::vector<int> first(1000, rank), second(1000, 2 * rank);
  RANK_CHECK_NCCL(ncclGroupStart());
  RANK_CHECK_NCCL(ncclAllReduce(first.data(), first.data(), first.size(), ncclInt32, ncclSum, comm, nullptr));
  RANK_CHECK_NCCL(ncclAllReduce(second.data(), second.data(), second.size(), ncclInt32, ncclMax, comm, nullptr));
  result = ncclGroupEnd();
  RANK_CHECK(result == ncclInProgress || result == ncclSuccess);
  RANK_CHECK(harness::settledState(comm) == ncclSuccess);
  RANK_EXPECT(first[999] == nranks * (nranks - 1) / 2);
  RANK_EXPECT(second[0] == 2 * (nranks - 1));

  ScopedComm half;
  result = ncclCommSplit(comm, rank % 2, rank, half.out(), useConfig ? &config : nullptr);
  RANK_CHECK(result == ncclInProgress || result == ncclSuccess);
  ncclResult_t halfState = harness::settledState(half);
  int unusedCount = 0;
  ncclCommCount(half, &unusedCount);
  RANK_CHECK(halfState == ncclSuccess) << halfState << " " << ncclGetLastError(half);
  int count = 0;
  RANK_CHECK_NCCL(ncclCommCount(half, &count));
  RANK_EXPECT(count == (nranks + 1 - rank % 2) / 2);
}

TEST(Nonblocking, ConfigBlockingZeroRunsInTheBackground) {
  for (RankMode mode : {RankMode::kThreads, RankMode::kProcesses}) {
    RankRunOptions options;
    options.nranks = 3;
    options.mode = mode;
    options.deadline = std::chrono::seconds(90);
    EXPECT_TRUE(harness::runRanks(options, [](int rank, int nranks, const ncclUniqueId& id) {
      nonblockingRank(rank, nranks, id, true);
    }));
  }
}

TEST(Nonblocking, CommBlockingKnobMakesEveryCommunicatorNonblocking) {
  RankRunOptions options;
  options.nranks = 2;
  options.mode = RankMode::kProcesses;
  options.env = {{"NCCL_COMM_BLOCKING", "0"}};
  options.deadline = std::chrono::seconds(90);
  EXPECT_TRUE(harness::runRanks(options, [](int rank, int nranks, const ncclUniqueId& id) {
    nonblockingRank(rank, nranks, id, false);
  }));
}

TEST(Nonblocking, FailureInTheBackgroundIsTheAsyncError) {
  RankRunOptions options;
  options.nranks = 2;
  options.mode = RankMode::kThreads;
  options.deadline = std::chrono::seconds(60);
  std::atomic<bool> firstSettledOnRank0{false};
  EXPECT_TRUE(harness::runRanks(options, [&](int rank, int nranks, const ncclUniqueId& id) {
    ScopedComm comm;
    ncclConfig_t config = nonblockingConfig();
    ncclCommInitRankConfig(comm.out(), nranks, id, rank, &config);
    RANK_CHECK(harness::settledState(comm) == ncclSuccess);
    std::vector<float> buffer(4099, 1.0f);
    ncclAllReduce(buffer.data(), buffer.data(), buffer.size(), ncclFloat, ncclSum, comm, nullptr);
    RANK_CHECK(harness::settledState(comm) == ncclSuccess);
    // Rank 1 leaves only once rank 0 has seen the first allreduce succeed: after that, its death
    // is what rank 0's state reports.
    if (rank == 0) firstSettledOnRank0.store(true);
    if (rank == 1) {
      while (!firstSettledOnRank0.load()) std::this_thread::yield();
      RANK_CHECK_NCCL(ncclCommAbort(comm.release()));  // never joins the next allreduce
      return;
    }
    ncclAllReduce(buffer.data(), buffer.data(), buffer.size(), ncclFloat, ncclSum, comm, nullptr);
    RANK_EXPECT(harness::settledState(comm) == ncclRemoteError);
    RANK_CHECK_NCCL(ncclCommAbort(comm.release()));
  }));
}

// A refusal that a blocking call would return (here WEFT_CHECK's: the ranks' counts differ) reaches
// a nonblocking caller as its communicator's async error.
TEST(Nonblocking, ARefusalInTheBackgroundIsTheAsyncError) {
  RankRunOptions options;
  options.nranks = 2;
  options.mode = RankMode::kThreads;
  options.env = {{"WEFT_CHECK", "1"}};
  options.deadline = std::chrono::seconds(60);
  EXPECT_TRUE(harness::runRanks(options, [](int rank, int nranks, const ncclUniqueId& id) {
    ScopedComm comm;
    ncclConfig_t config = nonblockingConfig();
    ncclCommInitRankConfig(comm.out(), nranks, id, rank, &config);
    RANK_CHECK(harness::settledState(comm) == ncclSuccess);
    std::vector<int> buffer(rank == 0 ? 100 : 200, 1);
    const ncclResult_t result =
        ncclAllReduce(buffer.data(), buffer.data(), buffer.size(), ncclInt32, ncclSum, comm, nullptr);
    RANK_CHECK(result == ncclInProgress || result == ncclInvalidUsage);
    RANK_EXPECT(harness::settledState(comm) == ncclInvalidUsage);
    RANK_EXPECT(buffer.front() == 1);
  }));
}

TEST(Nonblocking, AbortEndsAnInitWhosePeerNeverComes) {
  harness::DeadlineGuard guard(std::chrono::seconds(60), "Nonblocking.AbortEndsAnInitWhosePeerNeverComes");
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comm = nullptr;
  ncclConfig_t config = nonblockingConfig();
  // Rank 1 of 2 never calls: the init waits in the background.
  ASSERT_EQ(ncclCommInitRankConfig(&comm, 2, id, 0, &config), ncclInProgress);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ncclResult_t state = ncclSuccess;
  EXPECT_EQ(ncclCommGetAsyncError(comm, &state), ncclSuccess);
  EXPECT_EQ(state, ncclInProgress);
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 2.0);
}

}  // namespace
}  // namespace weft::multirank
