// WEFT_CHECK=1: ranks whose calls do not match get ncclInvalidUsage naming the ranks and what
// differs, instead of a hang or wrong data; the communicator stays usable afterwards.

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "nccl.h"
#include "tests/harness/rank_check.h"
#include "tests/harness/rank_runner.h"

namespace weft::reliability {
namespace {

using harness::RankMode;
using harness::RankRunOptions;
using harness::ScopedComm;

/// Each rank makes its own call (which may differ from the others'); `expected` are substrings of
/// the error every rank must get.
using RankCall = std::function<ncclResult_t(int rank, ncclComm_t comm, std::vector<int>& buffer)>;

void expectMismatch(RankMode mode, const RankCall& call, const std::vector<std::string>& expected) {
  RankRunOptions options;
  options.nranks = 3;
  options.mode = mode;
  options.env = {{"WEFT_CHECK", "1"}};
  options.deadline = std::chrono::seconds(60);
  EXPECT_TRUE(harness::runRanks(options, [&](int rank, int nranks, const ncclUniqueId& id) {
    ScopedComm comm;
    RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
    std::vector<int> buffer(1024, rank + 1);
    ncclResult_t result = call(rank, comm, buffer);
    std::string message = ncclGetLastError(comm);
    RANK_EXPECT(result == ncclInvalidUsage);
    for (const std::string& part : expected) {
      RANK_EXPECT(message.find(part) != std::string::npos);
    }
    // The check ran before anything moved: the communicator still works.
    std::fill(buffer.begin(), buffer.end(), rank + 1);
    RANK_CHECK_NCCL(ncclAllReduce(buffer.data(), buffer.data(), buffer.size(), ncclInt32, ncclSum, comm, nullptr));
    RANK_EXPECT(buffer[0] == 6 && buffer.back() == 6);
  }));
}

TEST(Mismatch, CountIsNamedWithBothRanks) {
  for (RankMode mode : {RankMode::kThreads, RankMode::kProcesses}) {
    expectMismatch(
        mode,
        [](int rank, ncclComm_t comm, std::vector<int>& buffer) {
          size_t count = rank == 2 ? 200 : 100;
          return ncclAllReduce(buffer.data(), buffer.data(), count, ncclInt32, ncclSum, comm, nullptr);
        },
        {"WEFT_CHECK", "rank 0 calls AllReduce #1 (count 100, int32, sum, host buffers)",
         "rank 2 calls AllReduce #1 (count 200, int32, sum, host buffers)"});
  }
}

TEST(Mismatch, CollectiveTypeOperatorAndRootAreChecked) {
  expectMismatch(
      RankMode::kThreads,
      [](int rank, ncclComm_t comm, std::vector<int>& buffer) {
        if (rank == 1) return ncclReduce(buffer.data(), buffer.data(), 10, ncclInt32, ncclSum, 0, comm, nullptr);
        return ncclBroadcast(buffer.data(), buffer.data(), 10, ncclInt32, 0, comm, nullptr);
      },
      {"rank 0 calls Broadcast #1 (count 10, int32, root 0, host buffers)",
       "rank 1 calls Reduce #1 (count 10, int32, sum, root 0, host buffers)"});
  expectMismatch(
      RankMode::kThreads,
      [](int rank, ncclComm_t comm, std::vector<int>& buffer) {
        return ncclAllReduce(buffer.data(), buffer.data(), 10, ncclInt32, rank == 1 ? ncclMax : ncclSum, comm, nullptr);
      },
      {"rank 1 calls AllReduce #1 (count 10, int32, max, host buffers)"});
  expectMismatch(
      RankMode::kThreads,
      [](int rank, ncclComm_t comm, std::vector<int>& buffer) {
        return ncclAllReduce(buffer.data(), buffer.data(), 10, rank == 2 ? ncclUint32 : ncclInt32, ncclSum, comm,
                             nullptr);
      },
      {"rank 2 calls AllReduce #1 (count 10, uint32, sum, host buffers)"});
  expectMismatch(
      RankMode::kThreads,
      [](int rank, ncclComm_t comm, std::vector<int>& buffer) {
        return ncclBroadcast(buffer.data(), buffer.data(), 10, ncclInt32, rank == 0 ? 1 : 0, comm, nullptr);
      },
      {"rank 0 calls Broadcast #1 (count 10, int32, root 1, host buffers)",
       "(count 10, int32, root 0, host buffers)"});
}

TEST(Mismatch, SendAndReceiveOfDifferentSizesAreNamed) {
  RankRunOptions options;
  options.nranks = 3;
  options.mode = RankMode::kThreads;
  options.env = {{"WEFT_CHECK", "1"}};
  options.deadline = std::chrono::seconds(60);
  EXPECT_TRUE(harness::runRanks(options, [](int rank, int nranks, const ncclUniqueId& id) {
    ScopedComm comm;
    RANK_CHECK_NCCL(ncclCommInitRank(comm.out(), nranks, id, rank));
    std::vector<int> buffer(64, rank);
    // Rank 2 takes no part in a launch of Send/Recv between ranks 0 and 1, as NCCL allows.
    if (rank == 2) return;
    // Rank 0 sends 10 ints to rank 1, which expects 20.
    ncclResult_t result = rank == 0 ? ncclSend(buffer.data(), 10, ncclInt32, 1, comm, nullptr)
                                    : ncclRecv(buffer.data(), 20, ncclInt32, 0, comm, nullptr);
    RANK_EXPECT(result == ncclInvalidUsage);
    RANK_EXPECT(std::string(ncclGetLastError(comm)).find("rank 0 sends 1 message(s), 40 bytes in all to rank 1, "
                                                         "which receives 1 message(s), 80 bytes in all") !=
                std::string::npos);
    // Matching sizes pass the check and arrive.
    std::vector<int> received(10, -1);
    RANK_CHECK_NCCL(rank == 0 ? ncclSend(buffer.data(), 10, ncclInt32, 1, comm, nullptr)
                              : ncclRecv(received.data(), 10, ncclInt32, 0, comm, nullptr));
    if (rank == 1) {
      RANK_EXPECT(received[9] == 0);
    }
  }));
}

}  // namespace
}  // namespace weft::reliability
