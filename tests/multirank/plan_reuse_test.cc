// A loop of the same call reuses the host executor's plan (src/exec/host_executor.h, PlanKey):
// only the buffers, the sequence number and the reduction's scalar change between such calls.
// These tests change exactly those, and what the key must tell apart (the root, the communicator,
// a communicator destroyed and another made), between calls that are otherwise the same, and
// check every element after each call.

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "nccl.h"
#include "tests/harness/rank_check.h"
#include "tests/harness/rank_runner.h"

namespace weft::multirank {
namespace {

using harness::RankMode;
using harness::RankRunOptions;
using harness::ScopedComm;

constexpr size_t kCount = 4099;  // more than one piece on some paths, odd to leave a tail

RankRunOptions options(int nranks, RankMode mode) {
  RankRunOptions run;
  run.nranks = nranks;
  run.mode = mode;
  run.label = "plan reuse";
  return run;
}

int32_t input(int rank, size_t i, int call) { return static_cast<int32_t>((i * 7 + call * 13) % 1009) + rank; }

// The sum over ranks of input(rank, i, call), each scaled by `scale(rank)`.
template <typename Scale>
int32_t expectedSum(int nranks, size_t i, int call, Scale scale) {
  int32_t want = 0;
  for (int r = 0; r < nranks; ++r) want += scale(r) * input(r, i, call);
  return want;
}

// Calls the same allreduce five times: out of place into fresh buffers, in place, then twice with
// PreMulSum whose multiplier differs per call (the key holds the operator's kind, not its scalar).
void allReduceWithNewBuffersEachCall(ncclComm_t comm, int rank, int nranks) {
  for (int call = 0; call < 5; ++call) {
    std::vector<int32_t> send(kCount), recv(kCount, -1);
    for (size_t i = 0; i < kCount; ++i) send[i] = input(rank, i, call);
    int32_t multiplier = call + rank;
    const bool premul = call >= 3;
    ncclRedOp_t op = ncclSum;
    if (premul) {
      RANK_CHECK_NCCL(ncclRedOpCreatePreMulSum(&op, &multiplier, ncclInt32, ncclScalarHostImmediate, comm));
    }
    const bool inPlace = call == 2;
    int32_t* out = inPlace ? send.data() : recv.data();
    RANK_CHECK_NCCL(ncclAllReduce(send.data(), out, kCount, ncclInt32, op, comm, cudaStream_t{}));
    if (premul) {
      RANK_CHECK_NCCL(ncclRedOpDestroy(op, comm));
    }
    for (size_t i = 0; i < kCount; ++i) {
      const int32_t want = expectedSum(nranks, i, call, [&](int r) { return premul ? call + r : 1; });
      RANK_CHECK(out[i] == want) << "call " << call << ", element " << i << " is " << out[i] << ", want " << want;
      if (harness::rankFailed()) return;
    }
  }
}

class PlanReuse : public ::testing::TestWithParam<std::tuple<int, RankMode>> {};

TEST_P(PlanReuse, RepeatedAllReduceSeesEachCallsBuffersAndScalar) {
  const auto [nranks, mode] = GetParam();
  EXPECT_TRUE(harness::runRanks(options(nranks, mode), [](int rank, int nranks, const ncclUniqueId& id) {
    ScopedComm comm;
    RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
    allReduceWithNewBuffersEachCall(comm.get(), rank, nranks);
  }));
}

// One PreMulSum made with ncclScalarDevice reads its multiplier where it points at each call (on
// host buffers, when the call runs), so a multiplier changed between calls is the one used.
TEST_P(PlanReuse, AScalarGivenByPointerIsReadAtEachCall) {
  const auto [nranks, mode] = GetParam();
  EXPECT_TRUE(harness::runRanks(options(nranks, mode), [](int rank, int nranks, const ncclUniqueId& id) {
    ScopedComm comm;
    RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
    int32_t multiplier = 0;
    ncclRedOp_t op;
    RANK_CHECK_NCCL(ncclRedOpCreatePreMulSum(&op, &multiplier, ncclInt32, ncclScalarDevice, comm.get()));
    for (int call = 0; call < 3; ++call) {
      multiplier = call + rank + 1;
      std::vector<int32_t> data(kCount);
      for (size_t i = 0; i < kCount; ++i) data[i] = input(rank, i, call);
      RANK_CHECK_NCCL(ncclAllReduce(data.data(), data.data(), kCount, ncclInt32, op, comm.get(), cudaStream_t{}));
      for (size_t i = 0; i < kCount; ++i) {
        const int32_t want = expectedSum(nranks, i, call, [&](int r) { return call + r + 1; });
        RANK_CHECK(data[i] == want) << "call " << call << ", element " << i << " is " << data[i] << ", want " << want;
        if (harness::rankFailed()) return;
      }
    }
    RANK_CHECK_NCCL(ncclRedOpDestroy(op, comm.get()));
  }));
}

TEST_P(PlanReuse, BroadcastOfOneSizeFromEachRootInTurn) {
  const auto [nranks, mode] = GetParam();
  EXPECT_TRUE(harness::runRanks(options(nranks, mode), [](int rank, int nranks, const ncclUniqueId& id) {
    ScopedComm comm;
    RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
    for (int call = 0; call < 2 * nranks; ++call) {
      const int root = call % nranks;
      std::vector<int32_t> data(kCount);
      for (size_t i = 0; i < kCount; ++i) data[i] = rank == root ? input(root, i, call) : -1;
      RANK_CHECK_NCCL(ncclBroadcast(data.data(), data.data(), kCount, ncclInt32, root, comm.get(), cudaStream_t{}));
      for (size_t i = 0; i < kCount; ++i) {
        RANK_CHECK(data[i] == input(root, i, call)) << "root " << root << ", element " << i << " is " << data[i];
        if (harness::rankFailed()) return;
      }
    }
  }));
}

// Two communicators of the same ranks take turns with the same call; then one is destroyed and a
// new one (which may reuse its address) takes its place.
TEST_P(PlanReuse, CommunicatorsTakingTurnsAndOneRemade) {
  const auto [nranks, mode] = GetParam();
  EXPECT_TRUE(harness::runRanks(options(nranks, mode), [](int rank, int nranks, const ncclUniqueId& id) {
    ScopedComm first;
    RANK_CHECK_NCCL(ncclCommInitRank(first.out(), nranks, id, rank));
    ScopedComm second;
    RANK_CHECK_NCCL(ncclCommSplit(first.get(), 0, rank, second.out(), nullptr));
    for (int turn = 0; turn < 3 && !harness::rankFailed(); ++turn) {
      allReduceWithNewBuffersEachCall(first.get(), rank, nranks);
      allReduceWithNewBuffersEachCall(second.get(), rank, nranks);
    }
    RANK_CHECK_NCCL(ncclCommDestroy(second.release()));
    ScopedComm remade;
    RANK_CHECK_NCCL(ncclCommSplit(first.get(), 0, rank, remade.out(), nullptr));
    allReduceWithNewBuffersEachCall(remade.get(), rank, nranks);
    allReduceWithNewBuffersEachCall(first.get(), rank, nranks);
  }));
}

INSTANTIATE_TEST_SUITE_P(Ranks, PlanReuse,
                         ::testing::Combine(::testing::Values(2, 3), ::testing::Values(RankMode::kProcesses,
                                                                                      RankMode::kThreads)),
                         harness::ranksAndModeName);

}  // namespace
}  // namespace weft::multirank
