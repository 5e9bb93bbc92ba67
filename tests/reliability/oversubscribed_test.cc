// More ranks than cores: 8 process ranks on a machine of 2 cores complete a few hundred small and
// large allreduces with exact results (the waits back off, so the ranks that hold a core do not
// starve the ones that need it).

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "nccl.h"
#include "tests/harness/rank_check.h"
#include "tests/harness/rank_runner.h"
#include "tests/reliability/allreduce_check.h"
#include "tests/reliability/run_options.h"

namespace weft::reliability {
namespace {

using harness::RankMode;
using harness::RankRunOptions;
using harness::ScopedComm;

constexpr int kRanks = 8;
constexpr int kAllReduces = 300;
/// Every thirtieth allreduce is large: 4 MiB of floats, many slots per connection.
constexpr size_t kLargeCount = size_t{1} << 20;

size_t countOf(int call) {
  if (call % 30 == 29) return kLargeCount;
  return 1 + static_cast<size_t>(call) * 37 % 5000;
}

class Oversubscribed : public ::testing::TestWithParam<Transport> {};

TEST_P(Oversubscribed, EightProcessRanksCompleteSmallAndLargeAllReduces) {
  RankRunOptions options;
  options.nranks = kRanks;
  options.mode = RankMode::kProcesses;
  options.env = transportEnv(GetParam());
  options.deadline = std::chrono::seconds(240);
  options.label = "8 process ranks, " + std::string(transportName(GetParam()));
  EXPECT_TRUE(harness::runRanks(options, [](int rank, int nranks, const ncclUniqueId& id) {
    ScopedComm comm;
    RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
    for (int call = 0; call < kAllReduces; ++call) {
      std::string wrong = allReduceAndCheck(comm, rank, nranks, countOf(call), call);
      RANK_CHECK(wrong.empty()) << wrong;
      if (call % 50 == 0) harness::noteRankProgress("allreduce " + std::to_string(call));
    }
  }));
}

INSTANTIATE_TEST_SUITE_P(Transports, Oversubscribed, ::testing::Values(Transport::kShm, Transport::kSocket),
                         [](const ::testing::TestParamInfo<Transport>& info) {
                           return std::string(transportName(info.param));
                         });

}  // namespace
}  // namespace weft::reliability
