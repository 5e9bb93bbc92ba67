// How shared-memory senders write their slots (transport/shm/stream_trial.h): every collective
// that goes through slots, every type, op, count and placement, exact, with ranks as processes and
// as threads, the slots always written with non-temporal stores (WEFT_SHM_STREAM_SLOTS=1), and
// as each sender measures (the default), whose trials switch the writes piece by piece. The logs
// show that every sender was set to stream, or that trials ran to their end on the ranks that
// send big pieces. Slots of 128 KiB (NCCL_BUFFSIZE=1 MiB) make the pieces many and big enough for
// trials. (That streamed slots were written with non-temporal stores is seen only in speed:
// docs/PERFORMANCE.md.)
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "nccl.h"
#include "tests/harness/comm_clique.h"
#include "tests/harness/rank_check.h"
#include "tests/harness/rank_runner.h"
#include "tests/harness/temp_dir.h"
#include "tests/multirank/collective_run.h"

namespace weft::multirank {
namespace {

namespace fs = std::filesystem;
using harness::RankMode;
using harness::RankRunOptions;
using harness::ScopedComm;

constexpr size_t kCounts[] = {1, 7, 4099, 70001};
constexpr int kRanks = 3;
constexpr uint64_t kSeed = 0x5107ea3dULL;

// "AllReduce_streamed_3ranks_processes", "AllReduce_measured_3ranks_threads".
std::string collectivePolicyAndModeName(
    const ::testing::TestParamInfo<std::tuple<Collective, bool, RankMode>>& info) {
  const auto [collective, measured, mode] = info.param;
  return std::string(collectiveName(collective)) + (measured ? "_measured_" : "_streamed_") +
         harness::ranksAndModeLabel(kRanks, mode);
}

// The lines of the logs in `folder` that hold `text`.
std::vector<std::string> logLinesWith(const fs::path& folder, const std::string& text) {
  std::vector<std::string> lines;
  for (const fs::directory_entry& entry : fs::directory_iterator(folder)) {
    std::istringstream log(harness::readWholeFile(entry.path()));
    for (std::string line; std::getline(log, line);) {
      if (line.find(text) != std::string::npos) lines.push_back(line);
    }
  }
  return lines;
}

// The ranks whose trials ended: "shm: rank 2's slots to rank 0 ... are now written ...".
std::set<int> ranksWithTrialsEnded(const fs::path& folder) {
  std::set<int> ranks;
  for (const std::string& line : logLinesWith(folder, " are now written ")) {
    int rank = -1;
    const size_t at = line.find("shm: rank ");
    if (at != std::string::npos && std::sscanf(line.c_str() + at, "shm: rank %d's", &rank) == 1) ranks.insert(rank);
  }
  return ranks;
}

class ShmSlotWrites : public ::testing::TestWithParam<std::tuple<Collective, bool, RankMode>> {};

TEST_P(ShmSlotWrites, EveryTypeOpCountAndPlacementMatchesTheReference) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "slots are streamed on x86-64 only";
#endif
  const auto [collective, measured, mode] = GetParam();
  harness::TempDir logs("weft-slot-writes-");
  ASSERT_FALSE(logs.path.empty());
  RankRunOptions options;
  options.nranks = kRanks;
  options.mode = mode;
  options.label = "shm slot writes";
  options.env = {{"WEFT_SHM_STREAM_SLOTS", measured ? "-1" : "1"},
                 {"NCCL_BUFFSIZE", "1048576"},
                 {"NCCL_DEBUG", "INFO"},
                 {"NCCL_DEBUG_SUBSYS", "SHM"},
                 {"NCCL_DEBUG_FILE", (logs.path / "rank.%p").string()}};
  EXPECT_TRUE(harness::runRanks(options, [collective](int rank, int nranks, const ncclUniqueId& id) {
    ScopedComm comm;
    RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
    runEveryTypeAndOp(comm, nranks, rank, collective, kCounts, kSeed, nullptr, nranks - 1);
  }));
  // Every rank sends to a peer through shared memory.
  const size_t senders = logLinesWith(logs.path, " sends to rank ").size();
  EXPECT_GE(senders, size_t{kRanks});
  if (measured) {
    EXPECT_EQ(logLinesWith(logs.path, "slots written as measured)").size(), senders);
    // A broadcast's or reduce's chain has one rank that only receives.
    const bool rooted = collective == Collective::kBroadcast || collective == Collective::kReduce;
    EXPECT_GE(ranksWithTrialsEnded(logs.path).size(), static_cast<size_t>(rooted ? kRanks - 1 : kRanks))
        << "a trial ended on every rank that sends big pieces";
  } else {
    EXPECT_EQ(logLinesWith(logs.path, "slots written with non-temporal stores)").size(), senders);
    EXPECT_TRUE(logLinesWith(logs.path, " are now written ").empty()) << "no trials";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Collectives, ShmSlotWrites,
    ::testing::Combine(::testing::Values(Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
                                         Collective::kBroadcast, Collective::kReduce, Collective::kAlltoAll,
                                         Collective::kSendRecvRing),
                       ::testing::Bool(), ::testing::Values(RankMode::kProcesses, RankMode::kThreads)),
    collectivePolicyAndModeName);

}  // namespace
}  // namespace weft::multirank
