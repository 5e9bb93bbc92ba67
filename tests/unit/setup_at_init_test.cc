#include "src/device/setup_at_init.h"

#include <gtest/gtest.h>

#include <vector>

#include "src/core/connection_table.h"

namespace weft::device {
namespace {

// A rank of process `pid` on machine 1 with CUDA device `device` (-1: none), in use or not.
PeerInfo rankOf(int pid, int device, bool inUse) {
  PeerInfo peer;
  peer.machineHash = 1;
  peer.pid = pid;
  peer.processNonce = 7;
  peer.cudaDevice = device;
  peer.gpuInUse = inUse ? 1 : 0;
  return peer;
}

TEST(SetupAtInit, ThreadsOfOneProcessWithGpusInUseSetUpAtInit) {
  EXPECT_TRUE(setsUpGpuAtInit({rankOf(10, 0, true), rankOf(10, 0, true)}));
  EXPECT_TRUE(setsUpGpuAtInit({rankOf(10, 0, true), rankOf(10, 1, true), rankOf(10, 0, true)}));
}

TEST(SetupAtInit, OthersKeepSettingUpAtTheFirstCall) {
  // One rank has nothing to connect.
  EXPECT_FALSE(setsUpGpuAtInit({rankOf(10, 0, true)}));
  // Processes of their own share no driver.
  EXPECT_FALSE(setsUpGpuAtInit({rankOf(10, 0, true), rankOf(11, 0, true)}));
  PeerInfo otherContainer = rankOf(10, 0, true);
  otherContainer.processNonce = 8;
  EXPECT_FALSE(setsUpGpuAtInit({rankOf(10, 0, true), otherContainer}));
  // A GPU not in use yet would need a CUDA context that a host-memory program never makes.
  EXPECT_FALSE(setsUpGpuAtInit({rankOf(10, 0, true), rankOf(10, 0, false)}));
  // A rank without a GPU.
  EXPECT_FALSE(setsUpGpuAtInit({rankOf(10, 0, true), rankOf(10, -1, false)}));
}

TEST(RingNeighbourRequests, EachRingSendsToTheNextRankAndReceivesFromThePrevious) {
  const std::vector<std::vector<int>> rings = {{0, 1, 2, 3}, {3, 1, 0, 2}};
  const std::vector<core::ConnectionRequest> requests = core::ringNeighbourRequests(rings, 3);
  ASSERT_EQ(requests.size(), 4u);
  auto expect = [&](size_t i, int channel, int peer, core::Direction direction) {
    EXPECT_EQ(requests[i].channel, channel) << i;
    EXPECT_EQ(requests[i].peer, peer) << i;
    EXPECT_EQ(requests[i].direction, direction) << i;
  };
  expect(0, 0, 0, core::Direction::kSend);  // rank 3 is last: the ring wraps to its first
  expect(1, 0, 2, core::Direction::kRecv);
  expect(2, 1, 1, core::Direction::kSend);
  expect(3, 1, 2, core::Direction::kRecv);  // rank 3 is first: it receives from the last
}

}  // namespace
}  // namespace weft::device
