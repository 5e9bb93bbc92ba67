// A shared-memory folder too small for a communicator's segments: init (or the first collective)
// fails with an error that says how much is needed, where, and what to do (enlarge the folder or
// set NCCL_SHM_DISABLE=1); nothing crashes (no SIGBUS), nothing hangs, nothing is left in the
// folder; and the advice works. The folder is a private tmpfs (WEFT_SHM_DIR points at it).

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <new>
#include <string>
#include <vector>

#include "nccl.h"
#include "tests/harness/rank_check.h"
#include "tests/harness/rank_runner.h"
#include "tests/reliability/allreduce_check.h"
#include "tests/reliability/run_options.h"
#include "tests/reliability/private_tmpfs.h"
#include "tests/reliability/process_census.h"

namespace weft::reliability {
namespace {

using harness::RankMode;
using harness::RankRunOptions;
using harness::ScopedComm;

constexpr size_t kMiB = size_t{1} << 20;
/// NCCL_BUFFSIZE, the default: one connection's segment holds that much and its headers.
constexpr size_t kBuffSize = 4 * kMiB;
constexpr auto kRunDeadline = std::chrono::seconds(90);
constexpr auto kChildDeadline = std::chrono::seconds(150);

/// How many ranks failed with the shared-memory folder's message. In memory shared with every
/// rank (threads, or processes forked after it was mapped).
struct SharedTally {
  std::atomic<int> sawFolderMessage{0};
};

SharedTally* mapTally() {
  void* memory = mmap(nullptr, sizeof(SharedTally), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  return memory == MAP_FAILED ? nullptr : new (memory) SharedTally();
}

RankRunOptions runIn(const std::string& folder, RankMode mode, Transport transport) {
  RankRunOptions options;
  options.nranks = 2;
  options.mode = mode;
  options.env = transportEnv(transport);
  options.env.push_back({"WEFT_SHM_DIR", folder});
  options.env.push_back({"NCCL_BUFFSIZE", std::to_string(kBuffSize)});
  options.deadline = kRunDeadline;
  options.label = "2 ranks with a small shared-memory folder";
  return options;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// Init, then one allreduce; one of them must fail. A rank whose own segment did not fit must
/// say so fully; its peer may instead report that this rank went away.
void expectFolderTooSmall(const std::string& folder, SharedTally* tally, int rank, int nranks,
                          const ncclUniqueId& id) {
  ScopedComm comm;
  ncclResult_t result = ncclCommInitRank(comm.out(), nranks, id, rank);
  std::string error = result == ncclSuccess ? "" : ncclGetLastError(nullptr);
  if (result == ncclSuccess) {
    std::string wrong = allReduceAndCheck(comm, rank, nranks, 1000, 0);
    RANK_CHECK(!wrong.empty()) << "init and an allreduce succeeded with every segment in a folder too small for them";
    error = wrong;
    (void)ncclCommAbort(comm.release());
  }
  if (!contains(error, folder + " has")) return;
  tally->sawFolderMessage.fetch_add(1);
  RANK_EXPECT(contains(error, "MiB needed (") && contains(error, " bytes)"))
      << "the error does not say how many bytes are needed: " << error;
  RANK_EXPECT(contains(error, "enlarge") && contains(error, "NCCL_SHM_DISABLE=1"))
      << "the error does not say what to do: " << error;
}

struct SmallFolderCase {
  RankMode mode;
  size_t bytes;          // of the tmpfs
  int ranksWithoutRoom;  // at least this many ranks find no room for their segment
};

std::string runTooSmall(const std::string& folder, const SmallFolderCase& param) {
  SharedTally* tally = mapTally();
  if (tally == nullptr) return "mmap of the tally failed";
  ::testing::AssertionResult outcome =
      harness::runRanks(runIn(folder, param.mode, Transport::kShm), [&](int rank, int nranks, const ncclUniqueId& id) {
        expectFolderTooSmall(folder, tally, rank, nranks, id);
      });
  const int reported = tally->sawFolderMessage.load();
  munmap(tally, sizeof(SharedTally));
  if (!outcome) return outcome.message();
  if (reported < param.ranksWithoutRoom) {
    return std::to_string(reported) + " ranks reported the full shared-memory folder " + folder + ", " +
           std::to_string(param.ranksWithoutRoom) + " expected";
  }
  std::vector<std::string> left = folderEntries(folder);
  if (!left.empty()) return "left in " + folder + " after the failed init: " + joinNames(left);
  return "";
}

class SmallShmFolder : public ::testing::TestWithParam<SmallFolderCase> {};

TEST_P(SmallShmFolder, FailsWithWhatIsNeededAndLeavesNothing) {
  TmpfsRun run = runWithPrivateTmpfs(GetParam().bytes, kChildDeadline, [](const std::string& folder) {
    return runTooSmall(folder, GetParam());
  });
  if (!run.skipped.empty()) GTEST_SKIP() << run.skipped;
  EXPECT_TRUE(run.failure.empty()) << run.failure;
}

// 1 MiB holds no segment: both ranks fail to make theirs. 6 MiB holds one of the two that 2 ranks
// need: one rank gets its segment and the other fails (which one is a race).
INSTANTIATE_TEST_SUITE_P(Sizes, SmallShmFolder,
                         ::testing::Values(SmallFolderCase{RankMode::kThreads, kMiB, 2},
                                           SmallFolderCase{RankMode::kProcesses, kMiB, 2},
                                           SmallFolderCase{RankMode::kThreads, kBuffSize + 2 * kMiB, 1},
                                           SmallFolderCase{RankMode::kProcesses, kBuffSize + 2 * kMiB, 1}),
                         [](const ::testing::TestParamInfo<SmallFolderCase>& info) {
                           return std::string(modeName(info.param.mode)) +
                                  "_" + std::to_string(info.param.bytes / kMiB) + "MiB";
                         });

TEST(SmallShmFolder, ShmDisableWorksInTheSameFolder) {
  TmpfsRun run = runWithPrivateTmpfs(kMiB, kChildDeadline, [](const std::string& folder) -> std::string {
    ::testing::AssertionResult outcome = harness::runRanks(
        runIn(folder, RankMode::kProcesses, Transport::kSocket), [](int rank, int nranks, const ncclUniqueId& id) {
          ScopedComm comm;
          RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
          std::string wrong = allReduceAndCheck(comm, rank, nranks, kMiB, 0);
          RANK_CHECK(wrong.empty()) << wrong;
        });
    return outcome ? "" : outcome.message();
  });
  if (!run.skipped.empty()) GTEST_SKIP() << run.skipped;
  EXPECT_TRUE(run.failure.empty()) << run.failure;
}

}  // namespace
}  // namespace weft::reliability
