// The harness's own failure paths: a rank that fails, crashes, exits, throws or hangs must be
// reported by rank, quickly, and the environment must reach the ranks (and only them).

#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

#include "nccl.h"
#include "tests/harness/rank_check.h"
#include "tests/harness/rank_runner.h"
#include "tests/harness/scoped_env.h"

namespace weft::harness {
namespace {

::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << part << "\" is not in: " << text;
}

RankRunOptions options(int nranks, RankMode mode) {
  RankRunOptions result;
  result.nranks = nranks;
  result.mode = mode;
  result.env = {{"NCCL_SOCKET_IFNAME", "lo"}};
  result.deadline = std::chrono::seconds(60);
  result.label = "harness check";
  return result;
}

class RankRunnerModes : public ::testing::TestWithParam<RankMode> {};

TEST_P(RankRunnerModes, PassesWhenEveryRankPasses) {
  EXPECT_TRUE(runRanks(options(3, GetParam()), [](int rank, int nranks, const ncclUniqueId&) {
    RANK_CHECK(nranks == 3) << "nranks " << nranks;
    RANK_CHECK(currentRank() == rank) << "currentRank " << currentRank();
  }));
}

TEST_P(RankRunnerModes, ReportsTheFailingRankAndItsMessage) {
  ::testing::AssertionResult result =
      runRanks(options(3, GetParam()), [](int rank, int, const ncclUniqueId&) {
        RANK_CHECK(rank != 1) << "allreduce float32 sum count 7 element 3: got 5 want 6";
      });
  ASSERT_FALSE(result);
  EXPECT_TRUE(contains(result.message(), "rank 1: allreduce float32 sum count 7 element 3: got 5 want 6"));
  EXPECT_TRUE(contains(result.message(), "harness_test.cc"));
}

TEST_P(RankRunnerModes, ExpectContinuesAndCheckReturns) {
  ::testing::AssertionResult result =
      runRanks(options(1, GetParam()), [](int, int, const ncclUniqueId&) {
        RANK_EXPECT(1 + 1 == 3) << "first";
        RANK_EXPECT(false) << "second";
        RANK_CHECK(false) << "third";
        RANK_CHECK(false) << "never reached";
      });
  ASSERT_FALSE(result);
  EXPECT_TRUE(contains(result.message(), "rank 0: first"));
  EXPECT_FALSE(contains(result.message(), "never reached"));
}

TEST_P(RankRunnerModes, NamesTheNcclCallAndItsResult) {
  ::testing::AssertionResult result =
      runRanks(options(1, GetParam()), [](int, int, const ncclUniqueId&) {
        RANK_CHECK_NCCL(ncclAllReduce(nullptr, nullptr, 4, ncclFloat, ncclSum, nullptr, cudaStream_t{}))
            << "on purpose";
      });
  ASSERT_FALSE(result);
  EXPECT_TRUE(contains(result.message(), "ncclAllReduce(nullptr"));
  EXPECT_TRUE(contains(result.message(), "ncclInvalidArgument"));
  EXPECT_TRUE(contains(result.message(), "on purpose"));
}

TEST_P(RankRunnerModes, ReportsAnEscapedException) {
  ::testing::AssertionResult result =
      runRanks(options(2, GetParam()), [](int rank, int, const ncclUniqueId&) {
        if (rank == 0) throw std::runtime_error("bad input table");
      });
  ASSERT_FALSE(result);
  EXPECT_TRUE(contains(result.message(), "rank 0: exception escaped the rank function: bad input table"));
}

TEST_P(RankRunnerModes, AppliesTheEnvironmentInRanksOnly) {
  ASSERT_EQ(getenv("WEFT_HARNESS_PROBE"), nullptr);
  RankRunOptions run = options(2, GetParam());
  run.env.push_back({"WEFT_HARNESS_PROBE", "42"});
  EXPECT_TRUE(runRanks(run, [](int, int, const ncclUniqueId&) {
    const char* probe = getenv("WEFT_HARNESS_PROBE");
    RANK_CHECK(probe != nullptr && std::string(probe) == "42") << "WEFT_HARNESS_PROBE is " << (probe ? probe : "unset");
  }));
  EXPECT_EQ(getenv("WEFT_HARNESS_PROBE"), nullptr) << "the override outlived the run";
}

INSTANTIATE_TEST_SUITE_P(Harness, RankRunnerModes,
                         ::testing::Values(RankMode::kProcesses, RankMode::kThreads),
                         [](const ::testing::TestParamInfo<RankMode>& info) {
                           return info.param == RankMode::kThreads ? "Threads" : "Processes";
                         });

TEST(RankRunnerProcesses, ReportsACrashedRank) {
  ::testing::AssertionResult result =
      runRanks(options(3, RankMode::kProcesses), [](int rank, int, const ncclUniqueId&) {
        // SIGABRT rather than SIGSEGV, which AddressSanitizer turns into a report and exit status 1.
        if (rank == 2) std::raise(SIGABRT);
        if (rank != 2) std::this_thread::sleep_for(std::chrono::seconds(30));
      });
  ASSERT_FALSE(result);
  EXPECT_TRUE(contains(result.message(), "rank 2 was killed by signal 6"));
  EXPECT_TRUE(contains(result.message(), "killed ranks 0, 1"));
}

TEST(RankRunnerProcesses, ReportsARankThatExitsWithoutReporting) {
  ::testing::AssertionResult result =
      runRanks(options(2, RankMode::kProcesses), [](int rank, int, const ncclUniqueId&) {
        if (rank == 1) _exit(3);
      });
  ASSERT_FALSE(result);
  EXPECT_TRUE(contains(result.message(), "rank 1 exited with status 3 before reporting"));
}

TEST(RankRunnerProcesses, KillsEveryRankAtTheDeadlineAndNamesTheStuckOnes) {
  RankRunOptions run = options(3, RankMode::kProcesses);
  run.deadline = std::chrono::seconds(2);
  const auto start = std::chrono::steady_clock::now();
  ::testing::AssertionResult result = runRanks(run, [](int rank, int, const ncclUniqueId&) {
    noteRankProgress("step " + std::to_string(rank));
    if (rank != 0) std::this_thread::sleep_for(std::chrono::seconds(60));
  });
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(result);
  EXPECT_TRUE(contains(result.message(), "deadline of 2 s passed with ranks 1, 2 still running"));
  EXPECT_TRUE(contains(result.message(), "rank 0 had finished"));
  EXPECT_TRUE(contains(result.message(), "rank 2 was at: step 2"));
  EXPECT_LT(elapsed, std::chrono::seconds(20));
}

TEST(RankRunnerProcesses, AsksStuckRanksWhatTheirCommunicatorsWaitForBeforeKillingThem) {
  ScopedEnv dump("WEFT_DUMP_SIGNAL", "USR1");  // the harness reads it here; the ranks inherit it
  RankRunOptions run = options(2, RankMode::kProcesses);
  run.deadline = std::chrono::seconds(3);
  ::testing::internal::CaptureStderr();  // the ranks' stderr too: they inherit it
  ::testing::AssertionResult result = runRanks(run, [](int rank, int nranks, const ncclUniqueId& id) {
    ScopedComm comm;
    RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
    if (rank == 1) std::this_thread::sleep_for(std::chrono::seconds(60));
  });
  const std::string printed = ::testing::internal::GetCapturedStderr();
  ASSERT_FALSE(result);
  EXPECT_TRUE(contains(result.message(), "rank 1 still running")) << result.message();
  EXPECT_TRUE(contains(printed, "progress of this process's communicators")) << printed;
}

TEST(RankRunnerThreadsDeathTest, AbortsAtTheDeadlineNamingTheStuckRanks) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        RankRunOptions run = options(2, RankMode::kThreads);
        run.deadline = std::chrono::seconds(1);
        (void)runRanks(run, [](int rank, int, const ncclUniqueId&) {
          noteRankProgress("step " + std::to_string(rank));
          if (rank == 1) std::this_thread::sleep_for(std::chrono::seconds(60));
        });
      },
      "deadline of 1 s passed in harness check: rank 1 still running; rank 1 was at: step 1");
}

}  // namespace
}  // namespace weft::harness
