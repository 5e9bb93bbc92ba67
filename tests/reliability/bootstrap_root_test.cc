// The bootstrap root never outlives its use: an id that is never used, or a communicator whose
// last rank never comes, leaves no thread and no listening port behind once the root gives up
// (after WEFT_TIMEOUT seconds without a new rank); a child forked meanwhile does not keep the port
// open; and a process that exits while a root waits exits cleanly.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "nccl.h"
#include "tests/harness/deadline_guard.h"
#include "tests/harness/rank_check.h"
#include "tests/harness/scoped_env.h"
#include "tests/reliability/allreduce_check.h"
#include "tests/reliability/listening_ports.h"
#include "tests/reliability/process_census.h"
#include "tests/reliability/stranger_crowd.h"

namespace weft::reliability {
namespace {

using harness::DeadlineGuard;
using harness::ScopedEnv;

/// The root's patience in these tests (WEFT_TIMEOUT while the id is made).
constexpr const char* kRootPatienceSeconds = "2";
/// Far beyond the patience: how long the root may take to notice and leave.
constexpr auto kSettleLimit = std::chrono::seconds(30);

std::vector<harness::EnvVar> loopbackEnv(const char* timeout) {
  return {{"NCCL_SOCKET_IFNAME", "lo"}, {"NCCL_COMM_ID", std::nullopt}, {"WEFT_TIMEOUT", timeout}};
}

/// Makes an id whose root gives up after kRootPatienceSeconds without a new rank.
::testing::AssertionResult impatientId(ncclUniqueId* id, IdRoot* root) {
  ScopedEnv env(loopbackEnv(kRootPatienceSeconds));
  ncclResult_t result = ncclGetUniqueId(id);
  if (result != ncclSuccess) return ::testing::AssertionFailure() << harness::describeResult(result);
  std::string why;
  if (!decodeIdRoot(*id, root, &why)) return ::testing::AssertionFailure() << why;
  return ::testing::AssertionSuccess();
}

TEST(BootstrapRoot, UnusedIdReleasesItsThreadAndPort) {
  DeadlineGuard guard(std::chrono::seconds(120), "BootstrapRoot.UnusedIdReleasesItsThreadAndPort");
  const ProcessCensus before = censusAfterWarmUp();
  ncclUniqueId id;
  IdRoot root;
  ASSERT_TRUE(impatientId(&id, &root));
  EXPECT_TRUE(thisProcessListensOn(root.root.port)) << "the root of a new id is not listening";
  EXPECT_EQ(takeCensus().threads, before.threads + 1) << "the root of a new id has no thread of its own";

  ProcessCensus after = waitForCensus(before, kSettleLimit);
  EXPECT_EQ(after, before) << "before the id: " << describe(before) << "; " << kSettleLimit.count()
                           << " s after: " << describe(after) << " (" << listFds() << ")";
  EXPECT_FALSE(thisProcessListensOn(root.root.port)) << "the root's port " << root.root.port << " is still open";
}

TEST(BootstrapRoot, AMissingRankFailsTheOthersInsteadOfHangingThem) {
  DeadlineGuard guard(std::chrono::seconds(120), "BootstrapRoot.AMissingRankFailsTheOthersInsteadOfHangingThem");
  const ProcessCensus before = censusAfterWarmUp();
  ncclUniqueId id;
  IdRoot root;
  ASSERT_TRUE(impatientId(&id, &root));

  // Ranks 0 and 1 of 3 join; rank 2 never comes. The ranks themselves would wait forever
  // (WEFT_TIMEOUT=0): only the root giving up can end their init.
  ScopedEnv env(loopbackEnv("0"));
  ncclResult_t results[2] = {ncclSuccess, ncclSuccess};
  std::string errors[2];
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    ranks.emplace_back([&, rank] {
      ncclComm_t comm = nullptr;
      results[rank] = ncclCommInitRank(&comm, 3, id, rank);
      errors[rank] = ncclGetLastError(nullptr);
      if (results[rank] == ncclSuccess) (void)ncclCommDestroy(comm);
    });
  }
  for (std::thread& rank : ranks) rank.join();
  const std::string rootAddress = addressText(root.root.address);
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_NE(results[rank], ncclSuccess) << "rank " << rank << " completed init without rank 2";
    EXPECT_NE(errors[rank].find("bootstrap root at " + rootAddress), std::string::npos)
        << "rank " << rank << "'s error does not name the root: " << errors[rank];
  }

  ProcessCensus after = waitForCensus(before, kSettleLimit);
  EXPECT_EQ(after, before) << "before the id: " << describe(before) << "; after: " << describe(after) << " ("
                           << listFds() << ")";
  EXPECT_FALSE(thisProcessListensOn(root.root.port)) << "the root's port " << root.root.port << " is still open";
}

TEST(BootstrapRoot, AForkedChildDoesNotKeepTheRootsPortOpen) {
  DeadlineGuard guard(std::chrono::seconds(60), "BootstrapRoot.AForkedChildDoesNotKeepTheRootsPortOpen");
  ScopedEnv env(loopbackEnv("0"));
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  IdRoot root;
  std::string why;
  ASSERT_TRUE(decodeIdRoot(id, &root, &why)) << why;
  ASSERT_TRUE(thisProcessListensOn(root.root.port));

  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(thisProcessListensOn(root.root.port) ? 1 : 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "the forked child holds a descriptor of the root's listening socket (wait status " << status << ")";

  // The id still works in this process, where the root runs.
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitRank(&comm, 1, id, 0), ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_TRUE(allReduceAndCheck(comm, 0, 1, 100, 0).empty());
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST(BootstrapRoot, AProcessExitsCleanlyWhileRootsWait) {
  DeadlineGuard guard(std::chrono::seconds(60), "BootstrapRoot.AProcessExitsCleanlyWhileRootsWait");
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Three roots, each serving a silent stranger, when exit() runs the atexit handlers and
    // destroys the library's statics.
    ScopedEnv env(loopbackEnv("0"));
    std::vector<StrangerCrowd> crowds(3);
    for (StrangerCrowd& crowd : crowds) {
      ncclUniqueId id;
      IdRoot root;
      std::string why;
      if (ncclGetUniqueId(&id) != ncclSuccess || !decodeIdRoot(id, &root, &why)) _exit(2);
      if (!crowd.join(root.root, PortKind::kRoot, 10, 2, root.secret).empty()) _exit(3);
    }
    std::exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child ended with wait status " << status;
}

}  // namespace
}  // namespace weft::reliability
