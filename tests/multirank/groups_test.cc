// Group semantics through the public API: several communicators driven from ONE thread
// (ncclCommInitAll, init inside a group, splits), send/receive in any order, nested groups,
// finalize, and NCCL-allocated and registered buffers.
//
// A single thread cannot be interrupted when a group deadlocks, so each such test runs under a
// DeadlineGuard that aborts the process (and names the test) instead of hanging.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "nccl.h"
#include "tests/harness/comm_clique.h"
#include "tests/harness/deadline_guard.h"
#include "tests/harness/rank_check.h"
#include "tests/harness/rank_runner.h"
#include "tests/harness/scoped_env.h"
#include "tests/multirank/transport_env.h"

namespace weft::multirank {
namespace {

using harness::CommClique;
using harness::DeadlineGuard;
using harness::ncclSucceeded;
using harness::runGrouped;
using harness::ScopedEnv;

constexpr int kRanks = 4;
constexpr size_t kCount = 1031;
constexpr std::chrono::seconds kDeadline{120};
const cudaStream_t kStream{};

using Buffers = std::vector<std::vector<int32_t>>;

// Rank r's element i; sums over any set of ranks stay far from overflow.
int32_t inputOf(int rank, size_t i) { return (rank + 1) * 100000 + static_cast<int32_t>(i); }

Buffers makeInputs(int nranks, size_t count) {
  Buffers inputs(nranks, std::vector<int32_t>(count));
  for (int r = 0; r < nranks; ++r) {
    for (size_t i = 0; i < count; ++i) inputs[r][i] = inputOf(r, i);
  }
  return inputs;
}

int32_t sumOver(const std::vector<int>& ranks, size_t i) {
  int32_t sum = 0;
  for (int r : ranks) sum += inputOf(r, i);
  return sum;
}

// recv[i] == sum over `ranks` of their element i, for every element.
::testing::AssertionResult holdsSums(const std::vector<int32_t>& recv, const std::vector<int>& ranks) {
  for (size_t i = 0; i < recv.size(); ++i) {
    if (recv[i] != sumOver(ranks, i)) {
      return ::testing::AssertionFailure()
             << "element " << i << " of " << recv.size() << " is " << recv[i] << ", want "
             << sumOver(ranks, i);
    }
  }
  return ::testing::AssertionSuccess();
}

std::vector<int> allRanks(int nranks) {
  std::vector<int> ranks;
  for (int r = 0; r < nranks; ++r) ranks.push_back(r);
  return ranks;
}

// The environment of every test here: the bootstrap on loopback, shm between ranks.
std::vector<harness::EnvVar> testEnv() { return transportEnv(Transport::kShm); }

// One grouped allreduce (sum) over every communicator of `comms`, rank r contributing
// makeInputs(...)[r]; returns the receive buffers.
::testing::AssertionResult groupedAllReduce(const std::vector<ncclComm_t>& comms, Buffers* recv) {
  const Buffers send = makeInputs(static_cast<int>(comms.size()), kCount);
  recv->assign(comms.size(), std::vector<int32_t>(kCount, -1));
  return ncclSucceeded(runGrouped(comms, [&](int r, ncclComm_t comm) {
    return ncclAllReduce(send[r].data(), (*recv)[r].data(), kCount, ncclInt32, ncclSum, comm, kStream);
  }));
}

void expectRanksInOrder(const CommClique& clique) {
  for (int r = 0; r < clique.size(); ++r) {
    int count = -1;
    int rank = -1;
    ASSERT_TRUE(ncclSucceeded(ncclCommCount(clique[r], &count)));
    ASSERT_TRUE(ncclSucceeded(ncclCommUserRank(clique[r], &rank)));
    EXPECT_EQ(count, clique.size()) << "communicator " << r;
    EXPECT_EQ(rank, r) << "communicator " << r;
  }
}

TEST(Groups, InitAllThenGroupedAllReduce) {
  DeadlineGuard guard(kDeadline, "Groups.InitAllThenGroupedAllReduce");
  ScopedEnv env(testEnv());
  CommClique clique;
  ASSERT_TRUE(ncclSucceeded(clique.initAll(kRanks)));
  expectRanksInOrder(clique);
  Buffers recv;
  ASSERT_TRUE(groupedAllReduce(clique.comms(), &recv));
  for (int r = 0; r < kRanks; ++r) EXPECT_TRUE(holdsSums(recv[r], allRanks(kRanks))) << "rank " << r;
}

TEST(Groups, InitInsideGroupFromOneThread) {
  DeadlineGuard guard(kDeadline, "Groups.InitInsideGroupFromOneThread");
  ScopedEnv env(testEnv());
  CommClique clique;
  ASSERT_TRUE(ncclSucceeded(clique.initRanksInGroup(kRanks)));
  expectRanksInOrder(clique);
  Buffers recv;
  ASSERT_TRUE(groupedAllReduce(clique.comms(), &recv));
  for (int r = 0; r < kRanks; ++r) EXPECT_TRUE(holdsSums(recv[r], allRanks(kRanks))) << "rank " << r;
}

// Splits every communicator of `parent` inside one group (as nccl-tests does).
::testing::AssertionResult splitInGroup(const CommClique& parent, const std::vector<int>& colors,
                                        CommClique* children) {
  std::vector<ncclComm_t> comms(parent.size(), nullptr);
  ::testing::AssertionResult result = ncclSucceeded(runGrouped(parent.comms(), [&](int r, ncclComm_t comm) {
    return ncclCommSplit(comm, colors[r], r, &comms[r], nullptr);
  }));
  children->adopt(comms);
  return result;
}

TEST(Groups, TwoCommunicatorsOfDifferentRankSetsInOneGroup) {
  DeadlineGuard guard(kDeadline, "Groups.TwoCommunicatorsOfDifferentRankSetsInOneGroup");
  ScopedEnv env(testEnv());
  CommClique parent;
  ASSERT_TRUE(ncclSucceeded(parent.initAll(kRanks)));
  CommClique halves;  // index = parent rank; even ranks form one communicator, odd ranks another
  ASSERT_TRUE(splitInGroup(parent, {0, 1, 0, 1}, &halves));
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_NE(halves[r], nullptr) << "rank " << r;
    int count = -1;
    int rank = -1;
    ASSERT_TRUE(ncclSucceeded(ncclCommCount(halves[r], &count)));
    ASSERT_TRUE(ncclSucceeded(ncclCommUserRank(halves[r], &rank)));
    EXPECT_EQ(count, 2) << "rank " << r;
    EXPECT_EQ(rank, r / 2) << "rank " << r << " (the split key orders ranks as in the parent)";
  }

  // One group: an allreduce on the 4-rank parent, an allreduce on the even half and an allgather
  // on the odd half.
  const Buffers send = makeInputs(kRanks, kCount);
  Buffers parentRecv(kRanks, std::vector<int32_t>(kCount, -1));
  Buffers halfRecv(kRanks, std::vector<int32_t>(2 * kCount, -1));
  ASSERT_TRUE(ncclSucceeded(ncclGroupStart()));
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_TRUE(ncclSucceeded(ncclAllReduce(send[r].data(), parentRecv[r].data(), kCount, ncclInt32,
                                            ncclSum, parent[r], kStream)));
    if (r % 2 == 0) {
      EXPECT_TRUE(ncclSucceeded(ncclAllReduce(send[r].data(), halfRecv[r].data(), kCount, ncclInt32,
                                              ncclSum, halves[r], kStream)));
    } else {
      EXPECT_TRUE(ncclSucceeded(ncclAllGather(send[r].data(), halfRecv[r].data(), kCount, ncclInt32,
                                              halves[r], kStream)));
    }
  }
  ASSERT_TRUE(ncclSucceeded(ncclGroupEnd()));

  for (int r = 0; r < kRanks; ++r) {
    EXPECT_TRUE(holdsSums(parentRecv[r], allRanks(kRanks))) << "parent allreduce, rank " << r;
    if (r % 2 == 0) {
      std::vector<int32_t> reduced(halfRecv[r].begin(), halfRecv[r].begin() + kCount);
      EXPECT_TRUE(holdsSums(reduced, {0, 2})) << "even half allreduce, rank " << r;
    } else {
      for (int member = 0; member < 2; ++member) {
        const int from = 2 * member + 1;  // parent rank of the odd half's member
        for (size_t i = 0; i < kCount; ++i) {
          ASSERT_EQ(halfRecv[r][member * kCount + i], inputOf(from, i))
              << "odd half allgather, rank " << r << ", chunk " << member << ", element " << i;
        }
      }
    }
  }
}

TEST(Groups, SplitWithNoColorGivesNull) {
  DeadlineGuard guard(kDeadline, "Groups.SplitWithNoColorGivesNull");
  ScopedEnv env(testEnv());
  CommClique parent;
  ASSERT_TRUE(ncclSucceeded(parent.initAll(kRanks)));
  CommClique members;
  ASSERT_TRUE(splitInGroup(parent, {7, NCCL_SPLIT_NOCOLOR, 7, NCCL_SPLIT_NOCOLOR}, &members));
  EXPECT_EQ(members[1], nullptr);
  EXPECT_EQ(members[3], nullptr);
  ASSERT_NE(members[0], nullptr);
  ASSERT_NE(members[2], nullptr);
  for (int r : {0, 2}) {
    int count = -1;
    ASSERT_TRUE(ncclSucceeded(ncclCommCount(members[r], &count)));
    EXPECT_EQ(count, 2) << "rank " << r;
  }
  // runGrouped skips the null entries: an allreduce over ranks 0 and 2.
  const Buffers send = makeInputs(kRanks, kCount);
  Buffers recv(kRanks, std::vector<int32_t>(kCount, -1));
  ASSERT_TRUE(ncclSucceeded(runGrouped(members.comms(), [&](int r, ncclComm_t comm) {
    return ncclAllReduce(send[r].data(), recv[r].data(), kCount, ncclInt32, ncclSum, comm, kStream);
  })));
  EXPECT_TRUE(holdsSums(recv[0], {0, 2}));
  EXPECT_TRUE(holdsSums(recv[2], {0, 2}));
}

TEST(Groups, SendsAndReceivesInAnyOrderComplete) {
  DeadlineGuard guard(kDeadline, "Groups.SendsAndReceivesInAnyOrderComplete");
  ScopedEnv env(testEnv());
  CommClique clique;
  ASSERT_TRUE(ncclSucceeded(clique.initAll(kRanks)));
  // send[r] chunk p goes to rank p; recv[r] chunk p comes from rank p. All receives of all ranks
  // are posted first, in reverse peer order, then all sends: nothing can complete before
  // ncclGroupEnd, so an executor that ran calls as they come would deadlock here.
  Buffers send(kRanks, std::vector<int32_t>(kRanks * kCount));
  Buffers recv(kRanks, std::vector<int32_t>(kRanks * kCount, -1));
  for (int r = 0; r < kRanks; ++r) {
    for (size_t i = 0; i < send[r].size(); ++i) send[r][i] = inputOf(r, i);
  }
  ASSERT_TRUE(ncclSucceeded(ncclGroupStart()));
  for (int r = kRanks - 1; r >= 0; --r) {
    for (int peer = kRanks - 1; peer >= 0; --peer) {
      EXPECT_TRUE(ncclSucceeded(ncclRecv(recv[r].data() + peer * kCount, kCount, ncclInt32, peer,
                                         clique[r], kStream)));
    }
  }
  for (int r = 0; r < kRanks; ++r) {
    for (int peer = 0; peer < kRanks; ++peer) {
      EXPECT_TRUE(ncclSucceeded(ncclSend(send[r].data() + peer * kCount, kCount, ncclInt32, peer,
                                         clique[r], kStream)));
    }
  }
  ASSERT_TRUE(ncclSucceeded(ncclGroupEnd()));
  for (int r = 0; r < kRanks; ++r) {
    for (int peer = 0; peer < kRanks; ++peer) {
      for (size_t i = 0; i < kCount; ++i) {
        ASSERT_EQ(recv[r][peer * kCount + i], inputOf(peer, r * kCount + i))
            << "rank " << r << ", chunk from rank " << peer << ", element " << i;
      }
    }
  }
}

TEST(Groups, NestedGroupsRunAtTheOutermostEnd) {
  DeadlineGuard guard(kDeadline, "Groups.NestedGroupsRunAtTheOutermostEnd");
  ScopedEnv env(testEnv());
  CommClique clique;
  ASSERT_TRUE(ncclSucceeded(clique.initAll(kRanks)));
  // Each inner group holds one rank's allreduce: had an inner ncclGroupEnd run its group, this
  // thread would wait there for ranks whose calls it has not made yet.
  const Buffers send = makeInputs(kRanks, kCount);
  Buffers recv(kRanks, std::vector<int32_t>(kCount, -1));
  ASSERT_TRUE(ncclSucceeded(ncclGroupStart()));
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_TRUE(ncclSucceeded(ncclGroupStart()));
    EXPECT_TRUE(ncclSucceeded(ncclAllReduce(send[r].data(), recv[r].data(), kCount, ncclInt32, ncclSum,
                                            clique[r], kStream)));
    EXPECT_TRUE(ncclSucceeded(ncclGroupEnd())) << "inner group of rank " << r;
  }
  ASSERT_TRUE(ncclSucceeded(ncclGroupEnd()));
  for (int r = 0; r < kRanks; ++r) EXPECT_TRUE(holdsSums(recv[r], allRanks(kRanks))) << "rank " << r;
}

TEST(Groups, FinalizeInGroupThenDestroyFromOneThread) {
  DeadlineGuard guard(kDeadline, "Groups.FinalizeInGroupThenDestroyFromOneThread");
  ScopedEnv env(testEnv());
  CommClique clique;
  ASSERT_TRUE(ncclSucceeded(clique.initAll(kRanks)));
  Buffers recv;
  ASSERT_TRUE(groupedAllReduce(clique.comms(), &recv));
  ASSERT_TRUE(ncclSucceeded(runGrouped(clique.comms(), [](int, ncclComm_t comm) { return ncclCommFinalize(comm); })));
  for (ncclComm_t comm : clique.release()) EXPECT_TRUE(ncclSucceeded(ncclCommDestroy(comm)));
}

TEST(Groups, FinalizeThenDestroyFromRankThreads) {
  harness::RankRunOptions options;
  options.nranks = kRanks;
  options.mode = harness::RankMode::kThreads;
  options.env = testEnv();
  options.label = "finalize then destroy";
  EXPECT_TRUE(harness::runRanks(options, [](int rank, int nranks, const ncclUniqueId& id) {
    ncclComm_t comm = nullptr;
    RANK_CHECK_NCCL(ncclCommInitRank(&comm, nranks, id, rank));
    harness::ScopedComm owner(comm);
    const std::vector<int32_t> send = makeInputs(nranks, kCount)[rank];
    std::vector<int32_t> recv(kCount, -1);
    RANK_CHECK_NCCL(ncclAllReduce(send.data(), recv.data(), kCount, ncclInt32, ncclSum, comm, kStream));
    ::testing::AssertionResult sums = holdsSums(recv, allRanks(nranks));
    RANK_CHECK(sums) << sums.message();
    RANK_CHECK_NCCL(ncclCommFinalize(comm));
    RANK_CHECK_NCCL(ncclCommDestroy(owner.release()));
  }));
}

TEST(Groups, NcclMemAllocAndRegisteredBuffersWork) {
  harness::RankRunOptions options;
  options.nranks = 3;
  options.mode = harness::RankMode::kThreads;
  options.env = testEnv();
  options.label = "ncclMemAlloc and ncclCommRegister";
  EXPECT_TRUE(harness::runRanks(options, [](int rank, int nranks, const ncclUniqueId& id) {
    harness::ScopedComm comm;
    RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
    const size_t bytes = nranks * kCount * sizeof(int32_t);
    void* send = nullptr;
    void* recv = nullptr;
    RANK_CHECK_NCCL(ncclMemAlloc(&send, bytes));
    RANK_CHECK(send != nullptr) << "ncclMemAlloc succeeded with a null pointer";
    RANK_CHECK_NCCL(ncclMemAlloc(&recv, bytes));
    RANK_CHECK(recv != nullptr) << "ncclMemAlloc succeeded with a null pointer";
    void* sendHandle = nullptr;
    void* recvHandle = nullptr;
    RANK_CHECK_NCCL(ncclCommRegister(comm, send, bytes, &sendHandle));
    RANK_CHECK_NCCL(ncclCommRegister(comm, recv, bytes, &recvHandle));

    const std::vector<int32_t> input = makeInputs(nranks, kCount)[rank];
    std::memcpy(send, input.data(), kCount * sizeof(int32_t));
    RANK_CHECK_NCCL(ncclAllReduce(send, recv, kCount, ncclInt32, ncclSum, comm, kStream));
    std::vector<int32_t> reduced(kCount);
    std::memcpy(reduced.data(), recv, kCount * sizeof(int32_t));
    ::testing::AssertionResult sums = holdsSums(reduced, allRanks(nranks));
    RANK_CHECK(sums) << "allreduce between registered buffers: " << sums.message();

    RANK_CHECK_NCCL(ncclAllGather(send, recv, kCount, ncclInt32, comm, kStream));
    const int32_t* gathered = static_cast<const int32_t*>(recv);
    for (int from = 0; from < nranks; ++from) {
      for (size_t i = 0; i < kCount; ++i) {
        RANK_CHECK(gathered[from * kCount + i] == inputOf(from, i))
            << "allgather between registered buffers: chunk " << from << " element " << i << " is "
            << gathered[from * kCount + i] << ", want " << inputOf(from, i);
      }
    }
    RANK_CHECK_NCCL(ncclCommDeregister(comm, sendHandle));
    RANK_CHECK_NCCL(ncclCommDeregister(comm, recvHandle));
    RANK_CHECK(ncclCommDeregister(comm, sendHandle) == ncclInvalidArgument)
        << "a handle deregistered twice was accepted";
    RANK_CHECK_NCCL(ncclMemFree(send));
    RANK_CHECK_NCCL(ncclMemFree(recv));
  }));
}

// In place, each rank sends the bytes it then receives over: every piece must leave before the
// peer's piece overwrites it, also when the message is larger than a connection's slots hold (two
// lanes of a group, or of one all-to-all, run side by side).
TEST(Groups, SendRecvAndAllToAllInPlaceLargerThanTheSlots) {
  harness::RankRunOptions options;
  options.nranks = 3;
  options.mode = harness::RankMode::kThreads;
  options.env = testEnv();
  options.label = "in-place sendrecv and alltoall";
  EXPECT_TRUE(harness::runRanks(options, [](int rank, int nranks, const ncclUniqueId& id) {
    harness::ScopedComm comm;
    RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
    const size_t count = size_t{3} << 20;  // 12 MiB of int32: three times the 4 MiB of slots
    std::vector<int32_t> buffer(count);
    for (size_t i = 0; i < count; ++i) buffer[i] = inputOf(rank, i);
    const int next = (rank + 1) % nranks, previous = (rank + nranks - 1) % nranks;
    RANK_CHECK_NCCL(ncclGroupStart());
    RANK_CHECK_NCCL(ncclSend(buffer.data(), count, ncclInt32, next, comm, kStream));
    RANK_CHECK_NCCL(ncclRecv(buffer.data(), count, ncclInt32, previous, comm, kStream));
    RANK_CHECK_NCCL(ncclGroupEnd());
    for (size_t i = 0; i < count; ++i) {
      RANK_CHECK(buffer[i] == inputOf(previous, i))
          << "in-place sendrecv: element " << i << " is " << buffer[i] << ", want " << inputOf(previous, i);
    }

    const size_t block = count / nranks;  // block b of rank r goes to rank b
    for (int b = 0; b < nranks; ++b) {
      for (size_t i = 0; i < block; ++i) buffer[b * block + i] = inputOf(rank, b * block + i);
    }
    RANK_CHECK_NCCL(ncclAlltoAll(buffer.data(), buffer.data(), block, ncclInt32, comm, kStream));
    for (int from = 0; from < nranks; ++from) {
      for (size_t i = 0; i < block; ++i) {
        const int32_t want = inputOf(from, rank * block + i);
        RANK_CHECK(buffer[from * block + i] == want)
            << "in-place alltoall: block " << from << " element " << i << " is " << buffer[from * block + i]
            << ", want " << want;
      }
    }
  }));
}

// Two splits of one parent in one group use the parent's bootstrap one after the other.
TEST(Groups, TwoSplitsOfOneParentInOneGroup) {
  harness::RankRunOptions options;
  options.nranks = 4;
  options.mode = harness::RankMode::kProcesses;
  options.deadline = std::chrono::seconds(90);
  EXPECT_TRUE(harness::runRanks(options, [](int rank, int nranks, const ncclUniqueId& id) {
    harness::ScopedComm parent;
    RANK_CHECK_NCCL(ncclCommInitRank(parent.out(), nranks, id, rank));
    harness::ScopedComm byParity, byHalf;
    RANK_CHECK_NCCL(ncclGroupStart());
    RANK_CHECK_NCCL(ncclCommSplit(parent, rank % 2, rank, byParity.out(), nullptr));
    RANK_CHECK_NCCL(ncclCommSplit(parent, rank / 2, rank, byHalf.out(), nullptr));
    RANK_CHECK_NCCL(ncclGroupEnd());
    std::vector<int> parity(5, rank), half(5, rank);
    RANK_CHECK_NCCL(ncclAllReduce(parity.data(), parity.data(), 5, ncclInt32, ncclSum, byParity, nullptr));
    RANK_CHECK_NCCL(ncclAllReduce(half.data(), half.data(), 5, ncclInt32, ncclSum, byHalf, nullptr));
    RANK_EXPECT(parity[4] == (rank % 2 == 0 ? 0 + 2 : 1 + 3));
    RANK_EXPECT(half[4] == (rank / 2 == 0 ? 0 + 1 : 2 + 3));
  }));
}

}  // namespace
}  // namespace weft::multirank
