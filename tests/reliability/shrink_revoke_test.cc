// ncclCommShrink and ncclCommRevoke: survivors drop a failed rank and go on with a smaller
// communicator; revoke stops a stuck call and leaves a communicator that can only be shrunk,
// split or destroyed.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <future>
#include <string>
#include <vector>

#include "nccl.h"
#include "tests/harness/deadline_guard.h"
#include "tests/harness/rank_check.h"
#include "tests/harness/rank_runner.h"
#include "tests/reliability/killable_ranks.h"

namespace weft::reliability {
namespace {

using harness::RankMode;
using harness::RankRunOptions;
using harness::ScopedComm;

/// An allreduce of each rank's (rank + 1) over `comm`; true when every element is right.
bool sumOfRanksIsRight(ncclComm_t comm, const std::vector<int>& parentRanks) {
  int rank = -1;
  if (ncclCommUserRank(comm, &rank) != ncclSuccess) return false;
  std::vector<int> buffer(4099, parentRanks[rank] + 1);
  if (ncclAllReduce(buffer.data(), buffer.data(), buffer.size(), ncclInt32, ncclSum, comm, nullptr) != ncclSuccess) {
    return false;
  }
  int expected = 0;
  for (int parentRank : parentRanks) expected += parentRank + 1;
  for (int value : buffer) {
    if (value != expected) return false;
  }
  return true;
}

TEST(Shrink, HealthyCommunicatorDropsARankThatDoesNotCall) {
  RankRunOptions options;
  options.nranks = 4;
  options.mode = RankMode::kThreads;
  options.deadline = std::chrono::seconds(60);
  EXPECT_TRUE(harness::runRanks(options, [](int rank, int nranks, const ncclUniqueId& id) {
    ScopedComm comm;
    RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
    if (rank == 1) return;  // excluded: takes no part, and destroys its communicator
    int excluded[] = {1};
    ScopedComm smaller;
    RANK_CHECK_NCCL(ncclCommShrink(comm, excluded, 1, smaller.out(), nullptr, NCCL_SHRINK_DEFAULT));
    int count = 0, newRank = -1;
    RANK_CHECK_NCCL(ncclCommCount(smaller, &count));
    RANK_CHECK_NCCL(ncclCommUserRank(smaller, &newRank));
    RANK_EXPECT(count == 3);
    RANK_EXPECT(newRank == (rank == 0 ? 0 : rank - 1));  // the old order, without the gap
    RANK_EXPECT(sumOfRanksIsRight(smaller, {0, 2, 3}));
  }));
}

TEST(Shrink, SurvivorsOfAnAbortedRankGoOn) {
  RankRunOptions options;
  options.nranks = 4;
  options.mode = RankMode::kThreads;
  options.deadline = std::chrono::seconds(60);
  EXPECT_TRUE(harness::runRanks(options, [](int rank, int nranks, const ncclUniqueId& id) {
    ScopedComm comm;
    RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
    RANK_CHECK(sumOfRanksIsRight(comm, {0, 1, 2, 3}));
    if (rank == 2) {
      RANK_CHECK_NCCL(ncclCommAbort(comm.release()));  // as good as dead to the others
      return;
    }
    // The next allreduce cannot complete: it fails, naming rank 2.
    std::vector<int> buffer(4099, 1);
    RANK_EXPECT(ncclAllReduce(buffer.data(), buffer.data(), buffer.size(), ncclInt32, ncclSum, comm, nullptr) ==
                ncclRemoteError);
    RANK_EXPECT(std::string(ncclGetLastError(comm)).find("rank 2 (host ") != std::string::npos);
    int excluded[] = {2};
    ScopedComm smaller;
    RANK_CHECK_NCCL(ncclCommShrink(comm, excluded, 1, smaller.out(), nullptr, NCCL_SHRINK_ABORT));
    RANK_EXPECT(sumOfRanksIsRight(smaller, {0, 1, 3}));
    RANK_CHECK_NCCL(ncclCommAbort(comm.release()));
  }));
}

TEST(Shrink, SurvivorsOfAKilledProcessGoOn) {
  harness::DeadlineGuard guard(std::chrono::seconds(90), "Shrink.SurvivorsOfAKilledProcessGoOn");
  constexpr int kRanks = 3;
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<pid_t> children = forkKillableRanks(kRanks, id, [](int rank, const ncclUniqueId& id) {
    ncclComm_t comm = nullptr;
    if (ncclCommInitRank(&comm, kRanks, id, rank) != ncclSuccess) return 10;
    if (!sumOfRanksIsRight(comm, {0, 1, 2})) return 11;
    if (rank == 1) raise(SIGKILL);
    std::vector<int> buffer(4099, 1);
    while (ncclAllReduce(buffer.data(), buffer.data(), buffer.size(), ncclInt32, ncclSum, comm, nullptr) ==
           ncclSuccess) {
    }
    int excluded[] = {1};
    ncclComm_t smaller = nullptr;
    if (ncclCommShrink(comm, excluded, 1, &smaller, nullptr, NCCL_SHRINK_ABORT) != ncclSuccess) {
      fprintf(stderr, "rank %d: shrink failed: %s\n", rank, ncclGetLastError(comm));
      return 12;
    }
    if (!sumOfRanksIsRight(smaller, {0, 2})) return 13;
    ncclCommDestroy(smaller);
    ncclCommAbort(comm);
    return 0;
  });
  ASSERT_EQ(children.size(), static_cast<size_t>(kRanks));
  for (int rank = 0; rank < kRanks; ++rank) {
    int status = waitForRank(children[rank]);
    if (rank == 1) continue;
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "rank " << rank << ": status " << status;
  }
}

TEST(Shrink, BadArgumentsAreRefused) {
  ncclComm_t comms[2] = {nullptr, nullptr};
  ASSERT_EQ(ncclCommInitAll(comms, 2, nullptr), ncclSuccess);
  ncclComm_t smaller = nullptr;
  int outOfRange[] = {5};
  EXPECT_EQ(ncclCommShrink(comms[0], outOfRange, 1, &smaller, nullptr, NCCL_SHRINK_DEFAULT), ncclInvalidArgument);
  int self[] = {0};
  EXPECT_EQ(ncclCommShrink(comms[0], self, 1, &smaller, nullptr, NCCL_SHRINK_DEFAULT), ncclInvalidArgument);
  int twice[] = {1, 1};
  EXPECT_EQ(ncclCommShrink(comms[0], twice, 2, &smaller, nullptr, NCCL_SHRINK_DEFAULT), ncclInvalidArgument);
  int one[] = {1};
  EXPECT_EQ(ncclCommShrink(comms[0], one, 1, &smaller, nullptr, 7), ncclInvalidArgument);
  EXPECT_EQ(ncclCommShrink(comms[0], one, 1, nullptr, nullptr, NCCL_SHRINK_DEFAULT), ncclInvalidArgument);
  EXPECT_EQ(ncclCommRevoke(comms[0], 1), ncclInvalidArgument);
  EXPECT_EQ(ncclCommDestroy(comms[0]), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(comms[1]), ncclSuccess);
}

TEST(Revoke, StopsAStuckCallAndLeavesOnlyManagementCalls) {
  harness::DeadlineGuard guard(std::chrono::seconds(60), "Revoke.StopsAStuckCallAndLeavesOnlyManagementCalls");
  ncclComm_t comms[2] = {nullptr, nullptr};
  ASSERT_EQ(ncclCommInitAll(comms, 2, nullptr), ncclSuccess);
  std::vector<float> buffer(4099, 1.0f);
  // Rank 1 never calls, so rank 0's allreduce waits until the revoke.
  auto stuck = std::async(std::launch::async, [&] {
    return ncclAllReduce(buffer.data(), buffer.data(), buffer.size(), ncclFloat, ncclSum, comms[0], nullptr);
  });
  ASSERT_EQ(stuck.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout);
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(ncclCommRevoke(comms[0], NCCL_REVOKE_DEFAULT), ncclSuccess);
  ASSERT_EQ(stuck.wait_for(std::chrono::seconds(1)), std::future_status::ready);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
  EXPECT_NE(stuck.get(), ncclSuccess);

  // Quiescent: the state is success, collectives are refused, destroy works.
  ncclResult_t asyncError = ncclInProgress;
  EXPECT_EQ(ncclCommGetAsyncError(comms[0], &asyncError), ncclSuccess);
  EXPECT_EQ(asyncError, ncclSuccess);
  EXPECT_EQ(ncclAllReduce(buffer.data(), buffer.data(), buffer.size(), ncclFloat, ncclSum, comms[0], nullptr),
            ncclInvalidUsage);
  EXPECT_NE(strstr(ncclGetLastError(comms[0]), "revoked"), nullptr) << ncclGetLastError(comms[0]);
  EXPECT_EQ(ncclCommDestroy(comms[0]), ncclSuccess);
  EXPECT_EQ(ncclCommAbort(comms[1]), ncclSuccess);
}

}  // namespace
}  // namespace weft::reliability
