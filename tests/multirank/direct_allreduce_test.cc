// The direct allreduce (src/exec/direct_collectives.h): ranks of one host read and write each
// other's buffers with process_vm_readv/writev. WEFT_CMA_MIN_BYTES=1 sends every allreduce
// through it, so the whole product of types, ops, counts (shares of zero elements included) and
// placements is checked exactly, as ranks in processes and in threads, alone and inside groups
// that also move data over the slot connections.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "nccl.h"
#include "tests/harness/rank_check.h"
#include "tests/harness/rank_runner.h"
#include "tests/multirank/collective_run.h"

namespace weft::multirank {
namespace {

using harness::RankMode;
using harness::RankRunOptions;
using harness::ScopedComm;

constexpr size_t kCounts[] = {1, 7, 4099, 70001};
constexpr uint64_t kSeed = 0xd1ec7a11ULL;

RankRunOptions directOptions(int nranks, RankMode mode) {
  RankRunOptions options;
  options.nranks = nranks;
  options.mode = mode;
  options.env = {{"WEFT_CMA_MIN_BYTES", "1"}};
  options.label = "direct allreduce";
  return options;
}

class DirectAllReduce : public ::testing::TestWithParam<std::tuple<int, RankMode>> {};

TEST_P(DirectAllReduce, EveryTypeOpCountAndPlacementMatchesTheReference) {
  const auto [nranks, mode] = GetParam();
  EXPECT_TRUE(harness::runRanks(directOptions(nranks, mode), [](int rank, int nranks, const ncclUniqueId& id) {
    ScopedComm comm;
    RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
    runEveryTypeAndOp(comm, nranks, rank, Collective::kAllReduce, kCounts, kSeed);
  }));
}

INSTANTIATE_TEST_SUITE_P(Ranks, DirectAllReduce,
                         ::testing::Combine(::testing::Values(2, 3), ::testing::Values(RankMode::kProcesses,
                                                                                      RankMode::kThreads)),
                         harness::ranksAndModeName);

// One group: an allreduce that runs direct between a ring send/receive before it and one after it,
// so the direct allreduce's allgathers share channel 0's connections with other lanes.
TEST(DirectAllReduceInGroups, RunsBetweenSendsAndReceivesOfTheSameGroup) {
  RankRunOptions options = directOptions(3, RankMode::kProcesses);
  EXPECT_TRUE(harness::runRanks(options, [](int rank, int nranks, const ncclUniqueId& id) {
    ScopedComm comm;
    RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
    const size_t count = 100003;
    std::vector<int32_t> send(count), recv(count), ringIn(count), ringIn2(count);
    for (size_t i = 0; i < count; ++i) send[i] = rank * 1000 + static_cast<int32_t>(i % 1000);
    const int next = (rank + 1) % nranks;
    const int previous = (rank + nranks - 1) % nranks;
    RANK_CHECK_NCCL(ncclGroupStart());
    RANK_CHECK_NCCL(ncclSend(send.data(), count, ncclInt32, next, comm, cudaStream_t{}));
    RANK_CHECK_NCCL(ncclRecv(ringIn.data(), count, ncclInt32, previous, comm, cudaStream_t{}));
    RANK_CHECK_NCCL(ncclAllReduce(send.data(), recv.data(), count, ncclInt32, ncclSum, comm, cudaStream_t{}));
    RANK_CHECK_NCCL(ncclSend(send.data(), count, ncclInt32, previous, comm, cudaStream_t{}));
    RANK_CHECK_NCCL(ncclRecv(ringIn2.data(), count, ncclInt32, next, comm, cudaStream_t{}));
    RANK_CHECK_NCCL(ncclGroupEnd());
    for (size_t i = 0; i < count; ++i) {
      const int32_t base = static_cast<int32_t>(i % 1000);
      RANK_CHECK(recv[i] == (0 + 1 + 2) * 1000 + 3 * base) << "allreduce element " << i << " is " << recv[i];
      RANK_CHECK(ringIn[i] == previous * 1000 + base) << "ring receive element " << i;
      RANK_CHECK(ringIn2[i] == next * 1000 + base) << "reverse ring receive element " << i;
    }
  }));
}

// PreMulSum with a multiplier that differs by rank (as nccl-tests' mulsum has it): each input is
// scaled by its own rank's multiplier, whichever rank reduces it.
TEST(DirectAllReducePreMulSum, ScalesEachInputByItsOwnRanksMultiplier) {
  EXPECT_TRUE(harness::runRanks(directOptions(3, RankMode::kProcesses), [](int rank, int nranks,
                                                                          const ncclUniqueId& id) {
    ScopedComm comm;
    RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
    int32_t multiplier = rank + 1;
    ncclRedOp_t op;
    RANK_CHECK_NCCL(ncclRedOpCreatePreMulSum(&op, &multiplier, ncclInt32, ncclScalarHostImmediate, comm));
    const size_t count = 50021;
    std::vector<int32_t> send(count), recv(count);
    for (size_t i = 0; i < count; ++i) send[i] = static_cast<int32_t>(i % 977) + rank;
    RANK_CHECK_NCCL(ncclAllReduce(send.data(), recv.data(), count, ncclInt32, op, comm, cudaStream_t{}));
    for (size_t i = 0; i < count; ++i) {
      int32_t want = 0;
      for (int r = 0; r < nranks; ++r) want += (r + 1) * (static_cast<int32_t>(i % 977) + r);
      RANK_CHECK(recv[i] == want) << "element " << i << " is " << recv[i] << ", want " << want;
    }
    RANK_CHECK_NCCL(ncclRedOpDestroy(op, comm));
  }));
}

}  // namespace
}  // namespace weft::multirank
