// Resource hygiene: communicators created and destroyed (or aborted) many times, and a peer that
// crashes, leave no file descriptor, thread or shared-memory segment behind.
//
// Each cycle makes a fresh communicator of 2 ranks from a fresh unique id (made by rank 0, which
// then hosts its root, and broadcast over a long-lived communicator), runs a small allreduce so
// that its connections are really made, and destroys or aborts it.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "nccl.h"
#include "tests/harness/deadline_guard.h"
#include "tests/harness/rank_check.h"
#include "tests/harness/rank_runner.h"
#include "tests/harness/scoped_env.h"
#include "tests/reliability/allreduce_check.h"
#include "tests/reliability/run_options.h"
#include "tests/reliability/process_census.h"

namespace weft::reliability {
namespace {

using harness::RankMode;
using harness::RankRunOptions;
using harness::ScopedComm;
using harness::ScopedEnv;
using Clock = std::chrono::steady_clock;

constexpr auto kSettleLimit = std::chrono::seconds(30);

enum class Ending { kDestroy, kAbort };

/// One communicator's life on `outer`'s ranks. Returns an empty string or what failed.
std::string oneLifetime(ncclComm_t outer, int rank, int nranks, int cycle, Ending ending) {
  ncclUniqueId id{};
  if (rank == 0) {
    ncclResult_t made = ncclGetUniqueId(&id);
    if (made != ncclSuccess) return "ncclGetUniqueId returned " + harness::describeResult(made);
  }
  ncclResult_t shared = ncclBroadcast(&id, &id, sizeof(id), ncclUint8, 0, outer, nullptr);
  if (shared != ncclSuccess) return "broadcasting the unique id returned " + harness::describeResult(shared);
  ncclComm_t comm = nullptr;
  ncclResult_t initialized = ncclCommInitRank(&comm, nranks, id, rank);
  if (initialized != ncclSuccess) return "ncclCommInitRank returned " + harness::describeResult(initialized);
  std::string wrong = allReduceAndCheck(comm, rank, nranks, 1000 + static_cast<size_t>(cycle % 7), cycle);
  ncclResult_t ended = ending == Ending::kDestroy ? ncclCommDestroy(comm) : ncclCommAbort(comm);
  if (!wrong.empty()) return wrong;
  if (ended != ncclSuccess) return "ending the communicator returned " + harness::describeResult(ended);
  return "";
}

/// An allreduce of one element on `outer`: every rank has reached this point.
std::string barrier(ncclComm_t outer, int rank, int nranks) { return allReduceAndCheck(outer, rank, nranks, 1, 0); }

struct CycleCase {
  RankMode mode;
  Transport transport;
  Ending ending;
  int cycles;
};

/// Runs `cycles` lifetimes after one to warm up, and compares what each process holds at the end
/// with what it held after the warm-up (in threads mode rank 0 counts for the shared process).
void cycleAndCount(const CycleCase& param, const std::string& folder, int rank, int nranks, const ncclUniqueId& id) {
  ScopedComm outer;
  RANK_CHECK_NCCL(ncclCommInitRank(outer.out(), nranks, id, rank));
  const bool counts = param.mode == RankMode::kProcesses || rank == 0;
  std::string failed = oneLifetime(outer, rank, nranks, 0, param.ending);
  RANK_CHECK(failed.empty()) << "warm-up cycle: " << failed;
  failed = barrier(outer, rank, nranks);
  RANK_CHECK(failed.empty()) << failed;
  const ProcessCensus before = counts ? settledCensus(kSettleLimit) : ProcessCensus{};
  failed = barrier(outer, rank, nranks);
  RANK_CHECK(failed.empty()) << failed;

  const auto start = Clock::now();
  for (int cycle = 1; cycle <= param.cycles; ++cycle) {
    failed = oneLifetime(outer, rank, nranks, cycle, param.ending);
    RANK_CHECK(failed.empty()) << "cycle " << cycle << ": " << failed;
    if (cycle % 100 == 0) harness::noteRankProgress("cycle " + std::to_string(cycle));
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  failed = barrier(outer, rank, nranks);
  RANK_CHECK(failed.empty()) << failed;
  if (counts) {
    ProcessCensus after = waitForCensus(before, kSettleLimit);
    RANK_EXPECT(after == before) << "after " << param.cycles << " lifetimes this process holds " << describe(after)
                                 << ", " << describe(before) << " before them (" << listFds() << ")";
  }
  if (rank == 0) {
    RANK_EXPECT(folderEntries(folder).empty()) << "left in the shared-memory folder: " << joinNames(folderEntries(folder));
    std::printf("[ reliability ] %d lifetimes of a 2-rank communicator (%s, %s, %s): %.1f s, %.1f ms each\n",
                param.cycles, modeName(param.mode), transportName(param.transport),
                param.ending == Ending::kDestroy ? "destroy" : "abort", seconds, 1000.0 * seconds / param.cycles);
    std::fflush(stdout);
  }
  failed = barrier(outer, rank, nranks);
  RANK_CHECK(failed.empty()) << failed;
}

std::string cycleCaseName(const ::testing::TestParamInfo<CycleCase>& info) {
  return std::string(modeName(info.param.mode)) + "_" +
         transportName(info.param.transport) + "_" + (info.param.ending == Ending::kDestroy ? "destroy" : "abort") +
         "_" + std::to_string(info.param.cycles);
}

void runCycles(const CycleCase& param, std::chrono::seconds deadline) {
  ScratchShmFolder folder;
  ASSERT_FALSE(folder.path().empty()) << "cannot make a folder in /dev/shm";
  RankRunOptions options;
  options.nranks = 2;
  options.mode = param.mode;
  options.env = transportEnv(param.transport);
  options.env.push_back({"WEFT_SHM_DIR", folder.path()});
  options.deadline = deadline;
  options.label = cycleCaseName(::testing::TestParamInfo<CycleCase>(param, 0));
  EXPECT_TRUE(harness::runRanks(options, [&](int rank, int nranks, const ncclUniqueId& id) {
    cycleAndCount(param, folder.path(), rank, nranks, id);
  }));
  EXPECT_TRUE(folderEntries(folder.path()).empty()) << "left in " << folder.path() << ": "
                                                    << joinNames(folderEntries(folder.path()));
}

class Lifecycle : public ::testing::TestWithParam<CycleCase> {};

TEST_P(Lifecycle, CyclesLeaveNothingBehind) { runCycles(GetParam(), std::chrono::seconds(240)); }

INSTANTIATE_TEST_SUITE_P(Cycles, Lifecycle,
                         ::testing::Values(CycleCase{RankMode::kProcesses, Transport::kShm, Ending::kDestroy, 50},
                                           CycleCase{RankMode::kProcesses, Transport::kShm, Ending::kAbort, 50},
                                           CycleCase{RankMode::kProcesses, Transport::kSocket, Ending::kDestroy, 50},
                                           CycleCase{RankMode::kProcesses, Transport::kSocket, Ending::kAbort, 50},
                                           CycleCase{RankMode::kThreads, Transport::kShm, Ending::kDestroy, 50},
                                           CycleCase{RankMode::kThreads, Transport::kSocket, Ending::kAbort, 50}),
                         cycleCaseName);

class LongLifecycle : public ::testing::TestWithParam<CycleCase> {};

TEST_P(LongLifecycle, ThousandCyclesLeaveNothingBehind) { runCycles(GetParam(), std::chrono::seconds(840)); }

INSTANTIATE_TEST_SUITE_P(Cycles, LongLifecycle,
                         ::testing::Values(CycleCase{RankMode::kProcesses, Transport::kShm, Ending::kDestroy, 1000},
                                           CycleCase{RankMode::kProcesses, Transport::kSocket, Ending::kDestroy, 1000}),
                         cycleCaseName);

/// The survivor's side of a crash: this process is rank 0; rank 1 is a child that kills itself
/// (SIGKILL: no destructor, no goodbye) after its first allreduce.
TEST(CrashedPeer, LeavesNothingBehindInTheSurvivor) {
  for (Transport transport : {Transport::kShm, Transport::kSocket}) {
    SCOPED_TRACE(transportName(transport));
    harness::DeadlineGuard guard(std::chrono::seconds(120), "CrashedPeer.LeavesNothingBehindInTheSurvivor");
    ScratchShmFolder folder;
    ASSERT_FALSE(folder.path().empty());
    std::vector<harness::EnvVar> env = transportEnv(transport);
    env.push_back({"WEFT_SHM_DIR", folder.path()});
    env.push_back({"WEFT_TIMEOUT", "5"});  // bounds the survivor's wait until dead peers are detected
    env.push_back({"NCCL_COMM_ID", std::nullopt});
    ScopedEnv scoped(env);
    const ProcessCensus before = censusAfterWarmUp();

    ncclUniqueId id;
    ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
    std::fflush(nullptr);
    pid_t peer = fork();
    ASSERT_GE(peer, 0);
    if (peer == 0) {
      ncclComm_t comm = nullptr;
      if (ncclCommInitRank(&comm, 2, id, 1) != ncclSuccess) _exit(2);
      if (!allReduceAndCheck(comm, 1, 2, 1000, 0).empty()) _exit(3);
      kill(getpid(), SIGKILL);
      _exit(4);
    }
    ncclComm_t comm = nullptr;
    ASSERT_EQ(ncclCommInitRank(&comm, 2, id, 0), ncclSuccess) << ncclGetLastError(nullptr);
    EXPECT_EQ(allReduceAndCheck(comm, 0, 2, 1000, 0), "");
    int status = 0;
    ASSERT_EQ(waitpid(peer, &status, 0), peer);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the peer ended with wait status " << status;
    EXPECT_NE(allReduceAndCheck(comm, 0, 2, 1000, 1), "") << "an allreduce with a dead peer succeeded";
    EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);

    ProcessCensus after = waitForCensus(before, kSettleLimit);
    EXPECT_EQ(after, before) << "after the crashed peer's communicator was aborted (" << listFds() << ")";
    EXPECT_TRUE(folderEntries(folder.path()).empty()) << "left in the shared-memory folder: "
                                                      << joinNames(folderEntries(folder.path()));
  }
}

}  // namespace
}  // namespace weft::reliability
