#include "src/device/residency.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

namespace weft::device {
namespace {

constexpr int kUnlimited = 1000;

// A rank on machine `machine` using the GPU at `busId` with `multiprocessors` (0: unknown), in
// process `pid` (0: a process of its own).
PeerInfo rankOn(uint64_t machine, const char* busId, int multiprocessors, int pid = 0) {
  static int lastPid = 1000;
  PeerInfo peer;
  peer.machineHash = machine;
  peer.pid = pid != 0 ? pid : ++lastPid;
  std::snprintf(peer.gpuBusId, sizeof(peer.gpuBusId), "%s", busId);
  peer.gpuMultiprocessors = static_cast<uint16_t>(multiprocessors);
  return peer;
}

// `n` ranks that are threads of process `pid` on GPU `busId` of machine 1, an H200 (132).
std::vector<PeerInfo> threadsOn(int n, const char* busId, int pid) {
  return std::vector<PeerInfo>(n, rankOn(1, busId, 132, pid));
}

TEST(Residency, HostMemoryRanksHaveNoLimit) {
  std::vector<PeerInfo> peers = {rankOn(1, "", 0), rankOn(1, "", 0)};
  EXPECT_EQ(blocksPerRankLimit(peers, kUnlimited), kUnlimited);
  EXPECT_EQ(blocksPerRankLimit({}, kUnlimited), kUnlimited);
}

TEST(Residency, RanksAloneOnTheirGpusMayFillThemButTheSpare) {
  // A launch larger than its GPU runs some blocks only after others end, while those wait for
  // peers that may wait for the late ones.
  std::vector<PeerInfo> peers = {rankOn(1, "0000:01:00.0", 132), rankOn(1, "0000:02:00.0", 132)};
  EXPECT_EQ(blocksPerRankLimit(peers, kUnlimited), 128);
  EXPECT_EQ(blocksPerRankLimit({rankOn(1, "0000:01:00.0", 20)}, kUnlimited), 16);
}

TEST(Residency, RanksOfProcessesSharingAGpuDivideItsMultiprocessors) {
  // 8 processes on one H200: (132 - 4) / 8 = 16 blocks each, so 8 x 16 = 128 fit beside 4 spare.
  std::vector<PeerInfo> peers;
  for (int r = 0; r < 8; ++r) peers.push_back(rankOn(1, "0000:01:00.0", 132));
  EXPECT_EQ(blocksPerRankLimit(peers, kUnlimited), 16);
  std::vector<PeerInfo> five(peers.begin(), peers.begin() + 5);
  EXPECT_EQ(blocksPerRankLimit(five, kUnlimited), 25);
  EXPECT_LE(5 * blocksPerRankLimit(five, kUnlimited), 132 - kSpareMultiprocessors);
}

TEST(Residency, ThreadsOfOneProcessSharingAGpuDivideHalfOfIt) {
  // So that a parent's and its split's kernels fit together: 4 threads on one H200 get
  // (132 - 4) / 2 / 4 = 16 blocks each, 64 a communicator, 128 for two.
  EXPECT_EQ(blocksPerRankLimit(threadsOn(4, "0000:01:00.0", 7), kUnlimited), 16);
  EXPECT_LE(2 * 4 * blocksPerRankLimit(threadsOn(4, "0000:01:00.0", 7), kUnlimited), 132 - kSpareMultiprocessors);
  EXPECT_EQ(blocksPerRankLimit(threadsOn(2, "0000:01:00.0", 7), kUnlimited), 32);
  // Two threads of each of two processes: the GPU is shared within a process, so halved too.
  std::vector<PeerInfo> mixed = threadsOn(2, "0000:01:00.0", 7);
  for (const PeerInfo& peer : threadsOn(2, "0000:01:00.0", 8)) mixed.push_back(peer);
  EXPECT_EQ(blocksPerRankLimit(mixed, kUnlimited), 16);
}

TEST(Residency, AThreadAloneOnItsGpuKeepsItWhole) {
  // One process, one rank per GPU (NCCL's way): its kernels wait only for other GPUs' kernels.
  std::vector<PeerInfo> peers = {rankOn(1, "0000:01:00.0", 132, 7), rankOn(1, "0000:02:00.0", 132, 7)};
  EXPECT_EQ(blocksPerRankLimit(peers, kUnlimited), 128);
}

TEST(Residency, TheMostCrowdedGpuSetsTheLimitForEveryRank) {
  // Three ranks share one GPU and one has a GPU of its own: every rank gets the crowded GPU's share.
  std::vector<PeerInfo> peers = {rankOn(1, "0000:01:00.0", 132), rankOn(1, "0000:01:00.0", 132),
                                 rankOn(1, "0000:01:00.0", 132), rankOn(1, "0000:02:00.0", 132)};
  EXPECT_EQ(blocksPerRankLimit(peers, kUnlimited), 128 / 3);
}

TEST(Residency, TheSameBusIdOnAnotherMachineIsAnotherGpu) {
  std::vector<PeerInfo> peers = {rankOn(1, "0000:01:00.0", 132), rankOn(2, "0000:01:00.0", 132),
                                 rankOn(2, "0000:01:00.0", 132)};
  EXPECT_EQ(blocksPerRankLimit(peers, kUnlimited), 128 / 2);
}

TEST(Residency, EveryRankGetsAtLeastOneBlock) {
  std::vector<PeerInfo> peers;
  for (int r = 0; r < 16; ++r) peers.push_back(rankOn(1, "0000:01:00.0", 8));
  EXPECT_EQ(blocksPerRankLimit(peers, kUnlimited), 1);
  EXPECT_EQ(blocksPerRankLimit(std::vector<PeerInfo>(16, rankOn(1, "0000:01:00.0", 8, 7)), kUnlimited), 1);
}

}  // namespace
}  // namespace weft::device
