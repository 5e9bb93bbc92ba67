#include "src/device/setup_at_init.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "algorithms/schedule.h"
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

TEST(SetupAtInit, ProcessesOfOneHostSetUpAtInitWhereTwoRanksShareOne) {
  // Two processes of two threads each, and a process of two threads beside one of its own.
  EXPECT_TRUE(setsUpGpuAtInit({rankOf(10, 0, true), rankOf(10, 0, true), rankOf(11, 0, true), rankOf(11, 0, true)}));
  EXPECT_TRUE(setsUpGpuAtInit({rankOf(10, 0, true), rankOf(11, 1, true), rankOf(10, 0, true)}));
  // Still every GPU in use, on one host.
  EXPECT_FALSE(setsUpGpuAtInit({rankOf(10, 0, true), rankOf(10, 0, true), rankOf(11, 0, false)}));
  PeerInfo otherHost = rankOf(11, 0, true);
  otherHost.hostHash = 2;
  EXPECT_FALSE(setsUpGpuAtInit({rankOf(10, 0, true), rankOf(10, 0, true), otherHost}));
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

// Whether `requests` hold (channel, peer, direction).
bool holds(const std::vector<core::ConnectionRequest>& requests, int channel, int peer, core::Direction direction) {
  return std::any_of(requests.begin(), requests.end(), [&](const core::ConnectionRequest& request) {
    return request.channel == channel && request.peer == peer && request.direction == direction;
  });
}

TEST(DirectPairRequests, AreExactlyTheConnectionsOfTheDirectSchedules) {
  for (int nranks : {2, 3, 4, 5, 8}) {
    for (int nChannels : {1, 2, 3, 4}) {
      std::vector<algorithms::Ring> rings(static_cast<size_t>(nChannels));
      for (algorithms::Ring& ring : rings) {
        for (int r = 0; r < nranks; ++r) ring.push_back(r);
      }
      for (int rank = 0; rank < nranks; ++rank) {
        const std::vector<core::ConnectionRequest> requests = core::directPairRequests(rank, nranks, nChannels);
        EXPECT_EQ(requests.size(), 4u * static_cast<size_t>(nranks - 1) + 2u);
        std::vector<algorithms::OpShape> shapes;
        shapes.push_back({algorithms::Collective::kAllToAll, 5, 0, nranks, rank});
        for (int other = 0; other < nranks; ++other) {
          shapes.push_back({algorithms::Collective::kGather, 5, other, nranks, rank});
          shapes.push_back({algorithms::Collective::kScatter, 5, other, nranks, rank});
          shapes.push_back({algorithms::Collective::kSend, 5, other, nranks, rank});  // to itself too
          shapes.push_back({algorithms::Collective::kRecv, 5, other, nranks, rank});
        }
        std::vector<core::ConnectionRequest> used;  // by the programs of every shape
        for (const algorithms::OpShape& shape : shapes) {
          algorithms::Program program;
          algorithms::buildRingProgram(shape, rings, &program);
          for (const algorithms::Lane& lane : program.lanes) {
            for (const algorithms::Step& step : lane.steps) {
              if (step.sendPeer >= 0) used.push_back({lane.channel, step.sendPeer, core::Direction::kSend});
              if (step.recvPeer >= 0) used.push_back({lane.channel, step.recvPeer, core::Direction::kRecv});
            }
          }
        }
        const std::string where = "rank " + std::to_string(rank) + "/" + std::to_string(nranks) + ", " +
                                  std::to_string(nChannels) + " channels";
        for (const core::ConnectionRequest& u : used) {
          EXPECT_TRUE(holds(requests, u.channel, u.peer, u.direction))
              << where << ": a program uses peer " << u.peer << " on channel " << u.channel << " unrequested";
        }
        for (const core::ConnectionRequest& r : requests) {
          EXPECT_TRUE(holds(used, r.channel, r.peer, r.direction))
              << where << ": requested peer " << r.peer << " on channel " << r.channel << ", which no program uses";
        }
      }
    }
  }
}

}  // namespace
}  // namespace weft::device
