// How shared-memory senders write their slots (transport/shm/stream_trial.h): every collective
// that goes through slots, every type, op, count and placement, exact, with ranks as processes and
// as threads, the slots always written with non-temporal stores (WEFT_SHM_STREAM_SLOTS=1), and
// as each sender measures (the default), whose trials switch the writes piece by piece. The logs
// prove that every sender streamed, or that trials ran to their end on every rank. Slots of
// 128 KiB (NCCL_BUFFSIZE=1 MiB) make the pieces many and big enough for trials.

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <tuple>

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

// Lines of the logs in `folder` that hold `text`.
int logLinesWith(const fs::path& folder, const std::string& text) {
  int lines = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(folder)) {
    std::istringstream log(harness::readWholeFile(entry.path()));
    for (std::string line; std::getline(log, line);) lines += line.find(text) != std::string::npos;
  }
  return lines;
}

class ShmSlotWrites : public ::testing::TestWithParam<std::tuple<Collective, bool, RankMode>> {};

TEST_P(ShmSlotWrites, EveryTypeOpCountAndPlacementMatchesTheReference) {
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
  const int senders = logLinesWith(logs.path, " sends to rank ");
  EXPECT_GE(senders, kRanks);
  if (measured) {
    EXPECT_EQ(logLinesWith(logs.path, "slots written as measured)"), senders);
    // A broadcast's or reduce's chain has one rank that only receives.
    const bool rooted = collective == Collective::kBroadcast || collective == Collective::kReduce;
    EXPECT_GE(logLinesWith(logs.path, " are now written "), rooted ? kRanks - 1 : kRanks)
        << "a trial ended on every rank that sends big pieces";
  } else {
    EXPECT_EQ(logLinesWith(logs.path, "slots written with non-temporal stores)"), senders);
    EXPECT_EQ(logLinesWith(logs.path, " are now written "), 0) << "no trials";
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
