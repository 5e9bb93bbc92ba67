// Point-to-point and collective calls inside one group may come in a different order on different
// ranks (NCCL matches sends with receives by peer, and collectives by their own order): their data
// must not mix.

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "nccl.h"
#include "tests/harness/deadline_guard.h"

namespace weft::multirank {
namespace {

TEST(GroupOrder, SendAndCollectiveInDifferentOrdersOnTwoRanks) {
  harness::DeadlineGuard guard(std::chrono::seconds(60), "GroupOrder.SendAndCollectiveInDifferentOrdersOnTwoRanks");
  ncclComm_t comms[2] = {nullptr, nullptr};
  ASSERT_EQ(ncclCommInitAll(comms, 2, nullptr), ncclSuccess) << ncclGetLastError(nullptr);
  const size_t count = 1027;  // the same size for both operations, so a mix-up would go unnoticed
  std::vector<int> message(count, 7), received(count, 0);
  std::vector<int> input0(count, 1), input1(count, 2), output0(count, 0), output1(count, 0);

  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  // Rank 0: the send first, then the allreduce. Rank 1: the allreduce first, then the receive.
  ASSERT_EQ(ncclSend(message.data(), count, ncclInt32, 1, comms[0], nullptr), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(input0.data(), output0.data(), count, ncclInt32, ncclSum, comms[0], nullptr), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(input1.data(), output1.data(), count, ncclInt32, ncclSum, comms[1], nullptr), ncclSuccess);
  ASSERT_EQ(ncclRecv(received.data(), count, ncclInt32, 0, comms[1], nullptr), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);

  for (size_t i = 0; i < count; ++i) {
    ASSERT_EQ(received[i], 7) << "element " << i << " of the message";
    ASSERT_EQ(output0[i], 3) << "element " << i << " of rank 0's allreduce";
    ASSERT_EQ(output1[i], 3) << "element " << i << " of rank 1's allreduce";
  }
  EXPECT_EQ(ncclCommDestroy(comms[0]), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(comms[1]), ncclSuccess);
}

}  // namespace
}  // namespace weft::multirank
