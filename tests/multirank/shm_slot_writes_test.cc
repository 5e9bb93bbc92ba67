// Shared-memory slots written with non-temporal stores (WEFT_SHM_STREAM_SLOTS=1): every collective
// that goes through slots, every type, op, count and placement, exact, with ranks as processes
// and as threads; the logs prove that every sender streamed. Small slots (NCCL_BUFFSIZE=128 KiB:
// 16 KiB each) make the pieces many, and the counts leave partial vectors at their ends.

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

// "AllReduce_3ranks_processes".
std::string collectiveAndModeName(const ::testing::TestParamInfo<std::tuple<Collective, RankMode>>& info) {
  const auto [collective, mode] = info.param;
  return std::string(collectiveName(collective)) + "_" + harness::ranksAndModeLabel(kRanks, mode);
}

struct SenderCount {
  int senders = 0;   // shm send connections made
  int streaming = 0;  // of them, those that stream their slots
};

// What the logs in `folder` say of the shm senders.
SenderCount shmSenders(const fs::path& folder) {
  SenderCount count;
  for (const fs::directory_entry& entry : fs::directory_iterator(folder)) {
    std::istringstream log(harness::readWholeFile(entry.path()));
    for (std::string line; std::getline(log, line);) {
      if (line.find("shm: rank ") == std::string::npos || line.find(" sends to rank ") == std::string::npos) continue;
      ++count.senders;
      count.streaming += line.find(", written with non-temporal stores)") != std::string::npos;
    }
  }
  return count;
}

class ShmStreamedSlots : public ::testing::TestWithParam<std::tuple<Collective, RankMode>> {};

TEST_P(ShmStreamedSlots, EveryTypeOpCountAndPlacementMatchesTheReference) {
  const auto [collective, mode] = GetParam();
  harness::TempDir logs("weft-streamed-slots-");
  ASSERT_FALSE(logs.path.empty());
  RankRunOptions options;
  options.nranks = kRanks;
  options.mode = mode;
  options.label = "streamed shm slots";
  options.env = {{"WEFT_SHM_STREAM_SLOTS", "1"},
                 {"NCCL_BUFFSIZE", "131072"},
                 {"NCCL_DEBUG", "INFO"},
                 {"NCCL_DEBUG_SUBSYS", "SHM"},
                 {"NCCL_DEBUG_FILE", (logs.path / "rank.%p").string()}};
  EXPECT_TRUE(harness::runRanks(options, [collective](int rank, int nranks, const ncclUniqueId& id) {
    ScopedComm comm;
    RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
    runEveryTypeAndOp(comm, nranks, rank, collective, kCounts, kSeed, nullptr, nranks - 1);
  }));
  // Every rank sends to at least one peer through shared memory, and every sender streams.
  const SenderCount count = shmSenders(logs.path);
  EXPECT_GE(count.senders, kRanks);
  EXPECT_EQ(count.streaming, count.senders);
}

INSTANTIATE_TEST_SUITE_P(
    Collectives, ShmStreamedSlots,
    ::testing::Combine(::testing::Values(Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
                                         Collective::kBroadcast, Collective::kReduce, Collective::kAlltoAll,
                                         Collective::kSendRecvRing),
                       ::testing::Values(RankMode::kProcesses, RankMode::kThreads)),
    collectiveAndModeName);

}  // namespace
}  // namespace weft::multirank
