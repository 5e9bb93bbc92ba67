#include "src/device/residency.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

namespace weft::device {
namespace {

constexpr int kUnlimited = 1000;

// A rank on machine `machine` using the GPU at `busId` with `multiprocessors` (0: unknown).
PeerInfo rankOn(uint64_t machine, const char* busId, int multiprocessors) {
  PeerInfo peer;
  peer.machineHash = machine;
  std::snprintf(peer.gpuBusId, sizeof(peer.gpuBusId), "%s", busId);
  peer.gpuMultiprocessors = static_cast<uint16_t>(multiprocessors);
  return peer;
}

TEST(Residency, HostMemoryRanksHaveNoLimit) {
  std::vector<PeerInfo> peers = {rankOn(1, "", 0), rankOn(1, "", 0)};
  EXPECT_EQ(blocksPerRankLimit(peers, kUnlimited), kUnlimited);
  EXPECT_EQ(blocksPerRankLimit({}, kUnlimited), kUnlimited);
}

TEST(Residency, ARankAloneOnItsGpuMayFillHalfOfItButTheSpare) {
  // A launch larger than its GPU runs some blocks only after others end, while those wait for
  // peers that may wait for the late ones; and another communicator's kernels may need the other
  // half at the same time (a parent and its split).
  std::vector<PeerInfo> peers = {rankOn(1, "0000:01:00.0", 132), rankOn(1, "0000:02:00.0", 132)};
  EXPECT_EQ(blocksPerRankLimit(peers, kUnlimited), 64);
  EXPECT_EQ(blocksPerRankLimit({rankOn(1, "0000:01:00.0", 20)}, kUnlimited), 8);
}

TEST(Residency, RanksSharingAGpuDivideHalfOfIt) {
  // So that a parent's and its split's kernels fit together: 8 ranks on one H200 get
  // (132 - 4) / 2 / 8 = 8 blocks each, 64 a communicator, 128 for two beside 4 spare.
  std::vector<PeerInfo> peers(8, rankOn(1, "0000:01:00.0", 132));
  EXPECT_EQ(blocksPerRankLimit(peers, kUnlimited), 8);
  std::vector<PeerInfo> five(5, rankOn(1, "0000:01:00.0", 132));
  EXPECT_EQ(blocksPerRankLimit(five, kUnlimited), 12);
  EXPECT_LE(2 * 5 * blocksPerRankLimit(five, kUnlimited), 132 - kSpareMultiprocessors);
  std::vector<PeerInfo> two(2, rankOn(1, "0000:01:00.0", 132));
  EXPECT_EQ(blocksPerRankLimit(two, kUnlimited), 32);
}

TEST(Residency, TheMostCrowdedGpuSetsTheLimitForEveryRank) {
  // Three ranks share one GPU and one has a GPU of its own: every rank gets the crowded GPU's share.
  std::vector<PeerInfo> peers = {rankOn(1, "0000:01:00.0", 132), rankOn(1, "0000:01:00.0", 132),
                                 rankOn(1, "0000:01:00.0", 132), rankOn(1, "0000:02:00.0", 132)};
  EXPECT_EQ(blocksPerRankLimit(peers, kUnlimited), 64 / 3);
}

TEST(Residency, TheSameBusIdOnAnotherMachineIsAnotherGpu) {
  std::vector<PeerInfo> peers = {rankOn(1, "0000:01:00.0", 132), rankOn(2, "0000:01:00.0", 132),
                                 rankOn(2, "0000:01:00.0", 132)};
  EXPECT_EQ(blocksPerRankLimit(peers, kUnlimited), 64 / 2);
}

TEST(Residency, EveryRankGetsAtLeastOneBlock) {
  std::vector<PeerInfo> peers(16, rankOn(1, "0000:01:00.0", 8));
  EXPECT_EQ(blocksPerRankLimit(peers, kUnlimited), 1);
}

}  // namespace
}  // namespace weft::device
