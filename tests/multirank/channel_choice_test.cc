// The channel count the tuner takes per call (algorithms/tuner.h): under constants whose channels
// add bandwidth, a communicator builds four host channels, small calls take one and large calls
// all four, and calls of both kinds in turn on one communicator are exact. NCCL_MIN_NCHANNELS is
// the fewest a call takes.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "nccl.h"
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

using TempDir = harness::TempDir;

// One channel moves 1 GB/s and four together 4 GB/s; each channel adds 1 us to a step. At 4 ranks
// the ring's allreduce of 4 B takes 1 channel (6 steps of 4 us; 6 more us per channel), and of 4
// MiB all 4 (1.5 x 4 MiB at 4 GB/s rather than 1).
constexpr const char* kChannelsAddBandwidth = R"({"weft_tune_file": 1,
  "shared_memory":    {"latency_us": 4, "bandwidth_gbps": 1, "channel_latency_us": 1, "peak_bandwidth_gbps": 4},
  "shared_memory_ll": {"latency_us": 4, "bandwidth_gbps": 1, "channel_latency_us": 1, "peak_bandwidth_gbps": 4},
  "network":          {"latency_us": 60, "bandwidth_gbps": 1, "channel_latency_us": 30, "peak_bandwidth_gbps": 4}})";

constexpr size_t kSmallCount = 1;
constexpr size_t kLargeCount = size_t{1} << 20;  // 4 MiB of int32

// Every collective at a small size, then a large one, then the small one again (the plans of
// different channel counts must not be taken for one another), each checked element by element.
void runSmallLargeSmall(int rank, int nranks, const ncclUniqueId& id) {
  ScopedComm comm;
  RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
  runEveryCollective(comm, nranks, rank, {kSmallCount, kLargeCount, kSmallCount}, /*root=*/2, 0xC4A7);
}

// Runs 4 ranks as processes with `env` added, their INIT and TUNING logs in one folder; returns
// the logs that hold a ring (one per rank), joined.
std::string runWithLogs(const std::vector<harness::EnvVar>& env, const char* label,
                        const TempDir& dir, bool* ok) {
  const fs::path logs = dir.path / label;
  fs::create_directories(logs);
  RankRunOptions options;
  options.nranks = 4;
  options.mode = RankMode::kProcesses;
  options.env = env;
  options.env.push_back({"NCCL_DEBUG", "INFO"});
  options.env.push_back({"NCCL_DEBUG_SUBSYS", "INIT,TUNING"});
  options.env.push_back({"NCCL_DEBUG_FILE", (logs / "rank.%p").string()});
  options.label = label;
  *ok = harness::runRanks(options, runSmallLargeSmall);
  std::string joined;
  int rankLogs = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(logs)) {
    const std::string log = harness::readWholeFile(entry.path());
    if (log.find("Channel 00/") == std::string::npos) continue;
    joined += log;
    ++rankLogs;
  }
  EXPECT_EQ(rankLogs, 4) << label;
  return joined;
}

TEST(ChannelChoice, SmallCallsTakeOneChannelAndLargeOnesSpread) {
  TempDir dir("weft-channels-");
  ASSERT_FALSE(dir.path.empty());
  const fs::path tuneFile = dir.path / "tune.json";
  std::ofstream(tuneFile) << kChannelsAddBandwidth;
  bool ok = false;
  const std::string logs = runWithLogs({{"WEFT_TUNE_FILE", tuneFile.string()}}, "channels add bandwidth", dir, &ok);
  EXPECT_TRUE(ok);
  EXPECT_NE(logs.find("Channel 03/04 :"), std::string::npos) << "four channels built:\n" << logs;
  EXPECT_NE(logs.find("AllReduce of 4 bytes on 4 ranks: tree/Simple on 1 of 4 channel(s)"), std::string::npos)
      << logs;
  EXPECT_NE(logs.find("AllReduce of 4194304 bytes on 4 ranks: ring/Simple on 4 of 4 channel(s)"), std::string::npos)
      << logs;
  EXPECT_NE(logs.find("AllGather of 4194304 bytes on 4 ranks: ring/Simple on 4 of 4 channel(s)"), std::string::npos)
      << logs;
}

TEST(ChannelChoice, NcclMinNChannelsIsTheFewestACallTakes) {
  TempDir dir("weft-channels-");
  ASSERT_FALSE(dir.path.empty());
  bool ok = false;
  const std::string logs = runWithLogs({{"NCCL_MIN_NCHANNELS", "3"}, {"NCCL_ALGO", "ring"}}, "three channels", dir, &ok);
  EXPECT_TRUE(ok);
  EXPECT_NE(logs.find("Channel 02/03 :"), std::string::npos) << logs;
  EXPECT_EQ(logs.find("Channel 03/"), std::string::npos) << logs;
  EXPECT_NE(logs.find("AllReduce of 4 bytes on 4 ranks: ring/Simple on 3 of 3 channel(s)"), std::string::npos) << logs;
  EXPECT_EQ(logs.find("on 1 of 3 channel(s)"), std::string::npos) << logs;
}

}  // namespace
}  // namespace weft::multirank
