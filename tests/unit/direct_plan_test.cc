// When an allreduce on GPU buffers runs as the direct kernel (src/device/direct_plan.h): only where
// every rank is a thread of one process on one host and one GPU, at most eight of them, on a GPU
// whose half holds a block of each; and how many blocks each rank's kernel runs, which every rank
// must agree on and which must leave half the GPU to other communicators.

#include "src/device/direct_plan.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

namespace weft::device {
namespace {

PeerInfo rank(int r, int pid, int device, const char* host = "host-a") {
  PeerInfo peer;
  peer.rank = r;
  peer.pid = pid;
  peer.cudaDevice = device;
  std::snprintf(peer.hostId, sizeof(peer.hostId), "%s", host);
  peer.hostHash = host[5];
  peer.machineHash = 7;
  return peer;
}

std::vector<PeerInfo> threadsOnOneGpu(int n) {
  std::vector<PeerInfo> peers;
  for (int r = 0; r < n; ++r) peers.push_back(rank(r, 100, 0));
  return peers;
}

TEST(DirectPlan, RanksThatAreThreadsOfOneProcessOnOneGpuGoDirect) {
  for (int n = 1; n <= kMaxDirectRanks; ++n) EXPECT_TRUE(sharesOneGpuInOneProcess(threadsOnOneGpu(n))) << n;
}

TEST(DirectPlan, MoreRanksThanTheKernelHoldsTakeTheRing) {
  EXPECT_FALSE(sharesOneGpuInOneProcess(threadsOnOneGpu(kMaxDirectRanks + 1)));
}

TEST(DirectPlan, AnotherProcessAnotherGpuOrAnotherHostTakesTheRing) {
  std::vector<PeerInfo> peers = threadsOnOneGpu(3);
  peers[2].pid = 101;
  EXPECT_FALSE(sharesOneGpuInOneProcess(peers)) << "a rank in another process";
  peers = threadsOnOneGpu(3);
  peers[1].processNonce = 12345;
  EXPECT_FALSE(sharesOneGpuInOneProcess(peers)) << "a process with the same pid in another pid namespace";
  peers = threadsOnOneGpu(3);
  peers[1].cudaDevice = 1;
  EXPECT_FALSE(sharesOneGpuInOneProcess(peers)) << "a rank on another GPU";
  peers = threadsOnOneGpu(3);
  peers[2] = rank(2, 100, 0, "host-b");
  EXPECT_FALSE(sharesOneGpuInOneProcess(peers)) << "a rank that NCCL_HOSTID puts on another host";
  peers = threadsOnOneGpu(2);
  for (PeerInfo& peer : peers) peer.cudaDevice = -1;
  EXPECT_FALSE(sharesOneGpuInOneProcess(peers)) << "ranks on host memory";
  EXPECT_FALSE(sharesOneGpuInOneProcess({}));
}

TEST(DirectPlan, EveryThreadHasAWordUntilTheBlocksFillHalfTheGpu) {
  constexpr int kThreads = 512;
  // 4 bytes: one 16-byte word; 2 ranks x 512 threads x 16 bytes per block.
  EXPECT_EQ(directBlocksPerRank(1, 4, 2, 132, kThreads), 1);
  EXPECT_EQ(directBlocksPerRank(2 * kThreads * 4, 4, 2, 132, kThreads), 1);
  EXPECT_EQ(directBlocksPerRank(2 * kThreads * 4 + 1, 4, 2, 132, kThreads), 2);
  EXPECT_EQ(directBlocksPerRank(uint64_t{64} << 20, 4, 2, 132, kThreads), 33);
  EXPECT_EQ(directBlocksPerRank(uint64_t{64} << 20, 4, 3, 132, kThreads), 22);
  EXPECT_EQ(directBlocksPerRank(uint64_t{64} << 20, 8, 8, 132, kThreads), 8);
}

TEST(DirectPlan, RanksGoDirectOnlyWhereHalfTheGpuHoldsABlockOfEach) {
  EXPECT_TRUE(directFits(8, 132));
  EXPECT_TRUE(directFits(2, 4));
  EXPECT_FALSE(directFits(3, 4)) << "a GPU (or an MPS share of one) with too little room for the ranks";
  EXPECT_FALSE(directFits(1, 1));
  for (int n = 1; n <= kMaxDirectRanks; ++n) {
    for (int multiprocessors : {2 * n, 2 * n + 1, 132}) {
      for (uint64_t count : {uint64_t{1}, uint64_t{4099}, uint64_t{1} << 30}) {
        ASSERT_TRUE(directFits(n, multiprocessors));
        const int blocks = directBlocksPerRank(count, 2, n, multiprocessors, 512);
        EXPECT_GE(blocks, 1);
        EXPECT_LE(2 * n * blocks, multiprocessors) << n << " ranks, " << count << " elements";
      }
    }
  }
}

}  // namespace
}  // namespace weft::device
