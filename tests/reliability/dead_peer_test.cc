// Dead peers: a rank that dies (its process is killed) or leaves without ncclCommDestroy (it
// aborts) makes the survivors' calls fail with ncclRemoteError naming it, within seconds; a rank
// that leaves through ncclCommDestroy is never reported.

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
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
using Clock = std::chrono::steady_clock;

constexpr size_t kCount = 1 << 16;
constexpr int kIterationsBeforeDeath = 20;
// Generous: detection itself takes milliseconds plus the one-second grace of a waiting call.
constexpr std::chrono::seconds kReportLimit{10};

double secondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

/// Runs allreduces until one fails; returns that result and, in *message, ncclGetLastError.
ncclResult_t allReduceUntilFailure(ncclComm_t comm, int maxIterations, std::string* message,
                                   Clock::time_point* failedAt) {
  std::vector<float> buffer(kCount, 1.0f);
  for (int i = 0; i < maxIterations; ++i) {
    ncclResult_t result = ncclAllReduce(buffer.data(), buffer.data(), kCount, ncclFloat, ncclSum, comm, nullptr);
    if (result != ncclSuccess) {
      *failedAt = Clock::now();
      *message = ncclGetLastError(comm);
      return result;
    }
    std::fill(buffer.begin(), buffer.end(), 1.0f);
  }
  return ncclSuccess;
}


TEST(DeadPeer, AbortedThreadRankIsReportedToTheOthers) {
  static std::atomic<Clock::time_point> abortedAt{Clock::time_point::max()};
  RankRunOptions options;
  options.nranks = 3;
  options.mode = RankMode::kThreads;
  options.deadline = std::chrono::seconds(90);
  options.label = "dead peer, 3 thread ranks";
  EXPECT_TRUE(harness::runRanks(options, [](int rank, int nranks, const ncclUniqueId& id) {
    ScopedComm comm;
    RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
    std::string message;
    Clock::time_point failedAt;
    if (rank == 2) {
      RANK_CHECK(allReduceUntilFailure(comm, kIterationsBeforeDeath, &message, &failedAt) == ncclSuccess);
      abortedAt.store(Clock::now());
      RANK_CHECK_NCCL(ncclCommAbort(comm.release()));
      return;
    }
    // The survivors keep calling: from iteration kIterationsBeforeDeath on, rank 2 never joins.
    RANK_CHECK(allReduceUntilFailure(comm, 1 << 30, &message, &failedAt) == ncclRemoteError);
    RANK_EXPECT(message.find("rank 2 (host ") != std::string::npos);
    RANK_EXPECT(failedAt - abortedAt.load() < kReportLimit);
    ncclResult_t asyncError = ncclSuccess;
    RANK_CHECK_NCCL(ncclCommGetAsyncError(comm, &asyncError));
    RANK_EXPECT(asyncError == ncclRemoteError);
    RANK_CHECK_NCCL(ncclCommAbort(comm.release()));
  }));
}

TEST(DeadPeer, KilledProcessRankIsReportedWithinSeconds) {
  harness::DeadlineGuard guard(std::chrono::seconds(90), "DeadPeer.KilledProcessRankIsReportedWithinSeconds");
  constexpr int kRanks = 3;
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  // Rank 2 writes to the pipe just before it kills itself; the survivors exit 0 when their calls
  // failed as expected.
  int deathPipe[2];
  ASSERT_EQ(pipe(deathPipe), 0);
  std::vector<pid_t> children = forkKillableRanks(kRanks, id, [&](int rank, const ncclUniqueId& id) {
    close(deathPipe[0]);
    // A call stuck this long fails, saying what it waits for, rather than outliving the test.
    setenv("WEFT_TIMEOUT", "30", 1);
    ncclComm_t comm = nullptr;
    if (ncclCommInitRank(&comm, kRanks, id, rank) != ncclSuccess) {
      fprintf(stderr, "rank %d: init failed: %s\n", rank, ncclGetLastError(nullptr));
      return 10;
    }
    std::string message;
    Clock::time_point failedAt;
    if (rank == kRanks - 1) {
      if (allReduceUntilFailure(comm, kIterationsBeforeDeath, &message, &failedAt) != ncclSuccess) {
        fprintf(stderr, "rank %d: an allreduce before its death failed: %s\n", rank, message.c_str());
        return 11;
      }
      char byte = 1;
      if (write(deathPipe[1], &byte, 1) != 1) return 12;
      raise(SIGKILL);
    }
    if (const ncclResult_t result = allReduceUntilFailure(comm, 1 << 30, &message, &failedAt);
        result != ncclRemoteError) {
      fprintf(stderr, "rank %d: the calls after rank 2's death returned %d: %s\n", rank, result, message.c_str());
      return 13;
    }
    if (message.find("rank 2 (host ") == std::string::npos) {
      fprintf(stderr, "rank %d: the error does not name rank 2: %s\n", rank, message.c_str());
      return 14;
    }
    ncclResult_t asyncError = ncclSuccess;
    if (ncclCommGetAsyncError(comm, &asyncError) != ncclSuccess || asyncError != ncclRemoteError) return 15;
    ncclCommAbort(comm);
    return 0;
  });
  ASSERT_EQ(children.size(), static_cast<size_t>(kRanks));
  close(deathPipe[1]);
  pollfd death{deathPipe[0], POLLIN, 0};
  char byte = 0;
  const bool reached = poll(&death, 1, 60 * 1000) == 1 && read(deathPipe[0], &byte, 1) == 1;
  close(deathPipe[0]);
  if (!reached) {
    for (pid_t child : children) kill(child, SIGKILL);
    for (int rank = 0; rank < kRanks; ++rank) {
      const int status = waitForRank(children[rank]);
      ADD_FAILURE() << "rank " << rank << ": status " << status << " (exit code " << WEXITSTATUS(status) << ")";
    }
    FAIL() << "rank 2 never reached the point where it dies within 60 s (the ranks' stderr says why)";
  }
  Clock::time_point diedAt = Clock::now();

  // Past the ranks' WEFT_TIMEOUT (a stuck call then says what it waits for), and within the
  // guard's 90 s where rank 2 died promptly: a survivor that hangs is named and killed.
  const std::vector<int> statuses = waitForRanksWithin(children, std::chrono::seconds(40));
  for (int rank = 0; rank < kRanks; ++rank) {
    const int status = statuses[rank];
    if (status == kStillRunning) {
      ADD_FAILURE() << "rank " << rank << " was still running 40 s after rank 2 died (killed)";
      continue;
    }
    if (rank == kRanks - 1) {
      EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
      continue;
    }
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "rank " << rank << ": status " << status << " (exit codes: see the rank's returns)";
  }
  EXPECT_LT(secondsSince(diedAt), std::chrono::duration<double>(kReportLimit).count())
      << "the survivors took too long to report the dead rank";
}

TEST(DeadPeer, IdleCommunicatorReportsItThroughGetAsyncError) {
  RankRunOptions options;
  options.nranks = 2;
  options.mode = RankMode::kThreads;
  options.deadline = std::chrono::seconds(60);
  EXPECT_TRUE(harness::runRanks(options, [](int rank, int nranks, const ncclUniqueId& id) {
    ScopedComm comm;
    RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
    // One collective first, so that both ranks have finished init before rank 1 leaves.
    std::string message;
    Clock::time_point unused;
    RANK_CHECK(allReduceUntilFailure(comm, 1, &message, &unused) == ncclSuccess);
    if (rank == 1) {
      RANK_CHECK_NCCL(ncclCommAbort(comm.release()));
      return;
    }
    Clock::time_point start = Clock::now();
    ncclResult_t asyncError = ncclSuccess;
    while (asyncError == ncclSuccess && Clock::now() - start < kReportLimit) {
      RANK_CHECK_NCCL(ncclCommGetAsyncError(comm, &asyncError));
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    RANK_EXPECT(asyncError == ncclRemoteError);
    RANK_CHECK_NCCL(ncclCommAbort(comm.release()));
  }));
}

TEST(DeadPeer, RankThatDestroysItsCommunicatorIsNotReported) {
  for (RankMode mode : {RankMode::kThreads, RankMode::kProcesses}) {
    RankRunOptions options;
    options.nranks = 3;
    options.mode = mode;
    options.deadline = std::chrono::seconds(60);
    EXPECT_TRUE(harness::runRanks(options, [](int rank, int nranks, const ncclUniqueId& id) {
      ScopedComm comm;
      RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
      std::string message;
      Clock::time_point unused;
      RANK_CHECK(allReduceUntilFailure(comm, 5, &message, &unused) == ncclSuccess);
      if (rank == 2) {
        RANK_CHECK_NCCL(ncclCommDestroy(comm.release()));
        return;  // a process rank then exits: its pid ends too
      }
      // Ranks 0 and 1 still work together, and see no error.
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      ncclResult_t asyncError = ncclRemoteError;
      RANK_CHECK_NCCL(ncclCommGetAsyncError(comm, &asyncError));
      RANK_EXPECT(asyncError == ncclSuccess);
      std::vector<int> value(1, rank);
      int peer = 1 - rank;
      RANK_CHECK_NCCL(ncclGroupStart());
      RANK_CHECK_NCCL(ncclSend(value.data(), 1, ncclInt32, peer, comm, nullptr));
      std::vector<int> received(1, -1);
      RANK_CHECK_NCCL(ncclRecv(received.data(), 1, ncclInt32, peer, comm, nullptr));
      RANK_CHECK_NCCL(ncclGroupEnd());
      RANK_EXPECT(received[0] == peer);
    })) << (mode == RankMode::kThreads ? "threads" : "processes");
  }
}

}  // namespace
}  // namespace weft::reliability
