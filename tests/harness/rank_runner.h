#pragma once
// Runs N ranks of one communicator inside one test, as threads of this process or as forked child
// processes, under a deadline, and reports the first rank that failed.
//
//   RankRunOptions options;
//   options.nranks = 4;
//   options.env = {{"NCCL_SHM_DISABLE", "1"}};
//   EXPECT_TRUE(runRanks(options, [](int rank, int nranks, const ncclUniqueId& id) {
//     ScopedComm comm;
//     RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
//     ...
//   }));
//
// Inside a rank function, check with RANK_CHECK / RANK_EXPECT (tests/harness/rank_check.h), not
// with GoogleTest's assertions.

#include <chrono>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "nccl.h"
#include "tests/harness/scoped_env.h"

namespace weft::harness {

enum class RankMode { kThreads, kProcesses };

/// A parameterized test's name for `nranks` ranks run as `mode`: "2ranks_threads", "3ranks_processes".
std::string ranksAndModeLabel(int nranks, RankMode mode);
/// The same, for a test parameterized by exactly those two.
std::string ranksAndModeName(const ::testing::TestParamInfo<std::tuple<int, RankMode>>& info);

struct RankRunOptions {
  int nranks = 2;
  RankMode mode = RankMode::kProcesses;
  /// Set in every rank before the rank function runs: processes call setenv in the child first
  /// thing; threads mode sets them before starting the threads and restores them after. They are
  /// also in force in this process while ncclGetUniqueId runs (it reads NCCL_SOCKET_IFNAME).
  std::vector<EnvVar> env;
  /// The whole run's limit. Processes: every child is killed (SIGKILL) and the ranks still running
  /// are named. Threads cannot be killed: the stuck ranks are printed and the process aborts.
  std::chrono::seconds deadline{120};
  /// Names the run in messages ("AllReduce 4 ranks shm").
  std::string label;
};

/// Runs on each rank with the id made by ncclGetUniqueId in this process (forked ranks join the
/// root listener thread that lives here). Records failures with the RANK_* checks.
using RankFunction = std::function<void(int rank, int nranks, const ncclUniqueId& id)>;

/// Runs `fn` on options.nranks ranks and waits for all of them. Returns success when every rank
/// returned without recording a failure; otherwise the first failing rank and its message (a
/// thrown exception and, for processes, a crash or an exit without a report count as failures).
/// Processes mode kills the remaining children as soon as one rank fails.
::testing::AssertionResult runRanks(const RankRunOptions& options, const RankFunction& fn);

/// Owns one communicator: ncclCommDestroy when this rank succeeded, ncclCommAbort once it has
/// recorded a failure (the peers may be stuck in a collective that will never complete).
class ScopedComm {
 public:
  ScopedComm() = default;
  explicit ScopedComm(ncclComm_t comm) : comm_(comm) {}
  ~ScopedComm();
  ScopedComm(const ScopedComm&) = delete;
  ScopedComm& operator=(const ScopedComm&) = delete;

  /// For ncclCommInitRank(comm.out(), ...): the slot to fill (the old communicator is released).
  ncclComm_t* out();
  ncclComm_t get() const { return comm_; }
  operator ncclComm_t() const { return comm_; }

  /// Gives up ownership without destroying.
  ncclComm_t release();

 private:
  ncclComm_t comm_ = nullptr;
};

}  // namespace weft::harness
