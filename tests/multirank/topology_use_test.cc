// What the communicator takes from the topology layer: the ring order of its ranks (hosts and
// sockets contiguous, shown by NCCL_DEBUG_SUBSYS=GRAPH) and NCCL_TOPO_DUMP_FILE.

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
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

fs::path fixture(const std::string& name) {
  return fs::path(__FILE__).parent_path() / ".." / "fixtures" / "topology" / name;
}

// Ranks 0 and 2 on one host, 1 and 3 on another (NCCL_HOSTID; they talk over sockets): the ring
// is 0 2 1 3, so it crosses between the hosts twice, and every collective over it is exact.
TEST(TopologyUse, RanksOfOneHostAreNeighboursOnTheRing) {
  TempDir logs("weft-topology-");
  ASSERT_FALSE(logs.path.empty());
  RankRunOptions options;
  options.nranks = 4;
  options.mode = RankMode::kProcesses;
  options.env = {{"NCCL_DEBUG", "INFO"},
                 {"NCCL_DEBUG_SUBSYS", "INIT,GRAPH"},
                 {"NCCL_DEBUG_FILE", (logs.path / "rank.%p").string()}};
  options.label = "ring order across two hosts";
  EXPECT_TRUE(harness::runRanks(options, [](int rank, int nranks, const ncclUniqueId& id) {
    setenv("NCCL_HOSTID", rank % 2 == 0 ? "weft-test-host-a" : "weft-test-host-b", 1);
    ScopedComm comm;
    RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
    runEveryCollective(comm, nranks, rank, {1, 4099}, /*root=*/1, 0x7090);
  }));
  // One log per rank says the ring (this process may have opened one too, for ncclGetUniqueId).
  int ringLogs = 0;
  std::string allLogs;
  for (const fs::directory_entry& entry : fs::directory_iterator(logs.path)) {
    const std::string log = harness::readWholeFile(entry.path());
    allLogs += log;
    if (log.find("Channel 00/01 :") == std::string::npos) continue;
    EXPECT_NE(log.find("Channel 00/01 :    0   2   1   3\n"), std::string::npos) << entry.path() << ":\n" << log;
    ++ringLogs;
  }
  EXPECT_EQ(ringLogs, 4);
  // Each rank's neighbours, as NCCL's GRAPH lines give them: previous -> rank -> next.
  for (const char* line : {"Ring 00 : 3 -> 0 -> 2\n", "Ring 00 : 0 -> 2 -> 1\n", "Ring 00 : 2 -> 1 -> 3\n",
                           "Ring 00 : 1 -> 3 -> 0\n"}) {
    EXPECT_NE(allLogs.find(line), std::string::npos) << "no line \"" << line << "\" in:\n" << allLogs;
  }
}

// NCCL_TOPO_DUMP_FILE writes what NCCL_TOPO_FILE reads: dumping a dump gives the same file.
TEST(TopologyUse, TopologyDumpReadsBackToTheSameFile) {
  TempDir dir("weft-topology-");
  ASSERT_FALSE(dir.path.empty());
  const fs::path first = dir.path / "first.xml";
  const fs::path second = dir.path / "second.xml";
  auto dumpWith = [](const fs::path& input, const fs::path& output) {
    RankRunOptions options;
    options.nranks = 2;
    options.mode = RankMode::kThreads;
    options.env = {{"NCCL_TOPO_FILE", input.string()}, {"NCCL_TOPO_DUMP_FILE", output.string()}};
    options.label = "topology dump";
    return harness::runRanks(options, [](int rank, int nranks, const ncclUniqueId& id) {
      ScopedComm comm;
      RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
    });
  };
  ASSERT_TRUE(dumpWith(fixture("full-dump-h100x8-nvswitch.xml"), first));
  ASSERT_TRUE(dumpWith(first, second));
  const std::string dumped = harness::readWholeFile(first);
  EXPECT_NE(dumped.find("<system"), std::string::npos) << dumped;
  size_t gpus = 0;
  for (size_t at = dumped.find("<gpu"); at != std::string::npos; at = dumped.find("<gpu", at + 1)) ++gpus;
  EXPECT_EQ(gpus, 8u) << dumped;
  EXPECT_EQ(harness::readWholeFile(second), dumped);
}

// A topology file that cannot be read fails an init that dumps the topology, with the file's name.
// (Communicators read NCCL_TOPO_FILE only for NCCL_TOPO_DUMP_FILE so far.)
TEST(TopologyUse, UnreadableTopologyFileFailsADumpingInitAndNamesTheFile) {
  RankRunOptions options;
  options.nranks = 2;
  options.mode = RankMode::kProcesses;
  const std::string broken = fixture("broken-mismatched-tags.xml").string();
  options.env = {{"NCCL_TOPO_FILE", broken}, {"NCCL_TOPO_DUMP_FILE", "/dev/null"}};
  options.label = "unreadable topology file";
  EXPECT_TRUE(harness::runRanks(options, [&broken](int rank, int nranks, const ncclUniqueId& id) {
    ncclComm_t comm = nullptr;
    const ncclResult_t result = ncclCommInitRank(&comm, nranks, id, rank);
    if (rank != 0) {
      // Rank 1 waits for rank 0, which fails: either its init fails too or it succeeds alone.
      if (comm != nullptr) (void)ncclCommAbort(comm);
      return;
    }
    RANK_CHECK(result != ncclSuccess) << "the init should fail on " << broken;
    const std::string last = ncclGetLastError(nullptr);
    RANK_CHECK(last.find("broken-mismatched-tags.xml") != std::string::npos) << last;
    if (comm != nullptr) (void)ncclCommAbort(comm);
  }));
}

}  // namespace
}  // namespace weft::multirank
