// When a communicator's GPUs can form a multicast team for NVLS, which types and ops the switches
// reduce, and how an NVLS launch splits its bytes: every byte of a call moved by exactly one block
// in one round, every word of a piece reduced by exactly one rank, the same on every rank.

#include "src/device/nvls_plan.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

namespace weft::device {
namespace {

using algorithms::DataType;
using algorithms::RedOpKind;

std::vector<PeerInfo> teamOf(int n) {
  std::vector<PeerInfo> peers(n);
  for (int r = 0; r < n; ++r) {
    PeerInfo& peer = peers[r];
    peer.rank = r;
    peer.pid = 100 + r;
    peer.cudaDevice = r;
    std::snprintf(peer.gpuBusId, sizeof(peer.gpuBusId), "0000:%02X:00.0", 0x10 + r);
    std::snprintf(peer.hostId, sizeof(peer.hostId), "host-a");
    peer.hostHash = 1;
    peer.gpuMulticast = 1;
    peer.gpuInUse = 1;
  }
  return peers;
}

TEST(NvlsPlan, TwoOrMoreMulticastGpusOfOneHostFormATeam) {
  for (int n = 2; n <= 8; ++n) {
    const NvlsVerdict verdict = nvlsTeamVerdict(teamOf(n), true);
    EXPECT_TRUE(verdict.possible) << n << ": " << verdict.reason;
    EXPECT_EQ(verdict.reason, "");
  }
}

TEST(NvlsPlan, EachReasonAgainstATeamIsNamed) {
  auto reason = [](const std::vector<PeerInfo>& peers, bool enabled = true) {
    const NvlsVerdict verdict = nvlsTeamVerdict(peers, enabled);
    EXPECT_FALSE(verdict.possible);
    return verdict.reason;
  };
  EXPECT_NE(reason(teamOf(4), false).find("NCCL_NVLS_ENABLE"), std::string::npos);
  EXPECT_NE(reason(teamOf(1)).find("two or more"), std::string::npos);
  std::vector<PeerInfo> peers = teamOf(4);
  peers[2].cudaDevice = -1;
  EXPECT_NE(reason(peers).find("rank 2 has no GPU"), std::string::npos);
  peers = teamOf(4);
  std::snprintf(peers[3].hostId, sizeof(peers[3].hostId), "host-b");
  peers[3].hostHash = 2;
  EXPECT_NE(reason(peers).find("rank 3 is on another host"), std::string::npos);
  peers = teamOf(4);
  std::snprintf(peers[1].gpuBusId, sizeof(peers[1].gpuBusId), "%s", peers[0].gpuBusId);
  EXPECT_NE(reason(peers).find("ranks 0 and 1 share the GPU"), std::string::npos);
  peers = teamOf(4);
  peers[2].gpuMulticast = 0;
  EXPECT_NE(reason(peers).find("rank 2's GPU 0000:12:00.0 reports no multicast"), std::string::npos);
  peers = teamOf(4);
  peers[1].gpuInUse = 0;
  EXPECT_NE(reason(peers).find("cudaSetDevice"), std::string::npos);
}

TEST(NvlsPlan, TheSwitchesReduceMultimemsTypesAndOps) {
  const DataType sums[] = {DataType::kInt32,   DataType::kUint32,   DataType::kInt64,   DataType::kUint64,
                           DataType::kFloat16, DataType::kBfloat16, DataType::kFloat32, DataType::kFloat64};
  for (DataType type : sums) EXPECT_TRUE(nvlsReduces(type, RedOpKind::kSum, 1)) << static_cast<int>(type);
  const DataType extremes[] = {DataType::kInt32,  DataType::kUint32,  DataType::kInt64,
                               DataType::kUint64, DataType::kFloat16, DataType::kBfloat16};
  for (DataType type : extremes) {
    EXPECT_TRUE(nvlsReduces(type, RedOpKind::kMin, 1)) << static_cast<int>(type);
    EXPECT_TRUE(nvlsReduces(type, RedOpKind::kMax, 1)) << static_cast<int>(type);
  }
  // Not on sm_90: float and double min/max, 8-bit integers, fp8, products, PreMulSum, the
  // integer average's division.
  EXPECT_FALSE(nvlsReduces(DataType::kFloat32, RedOpKind::kMax, 1));
  EXPECT_FALSE(nvlsReduces(DataType::kFloat64, RedOpKind::kMin, 1));
  EXPECT_FALSE(nvlsReduces(DataType::kInt8, RedOpKind::kSum, 1));
  EXPECT_FALSE(nvlsReduces(DataType::kUint8, RedOpKind::kMax, 1));
  EXPECT_FALSE(nvlsReduces(DataType::kFloat8e4m3, RedOpKind::kSum, 1));
  EXPECT_FALSE(nvlsReduces(DataType::kFloat8e5m2, RedOpKind::kSum, 1));
  EXPECT_FALSE(nvlsReduces(DataType::kFloat32, RedOpKind::kProd, 1));
  EXPECT_FALSE(nvlsReduces(DataType::kFloat32, RedOpKind::kPreMulSum, 1));
  EXPECT_FALSE(nvlsReduces(DataType::kInt32, RedOpKind::kSum, 4));
}

TEST(NvlsPlan, ALaunchTakesABlockPer64KiBUpToTheCommunicators) {
  EXPECT_EQ(nvlsLaunchBlocks(0, 16), 1);
  EXPECT_EQ(nvlsLaunchBlocks(1, 16), 1);
  EXPECT_EQ(nvlsLaunchBlocks(kNvlsBytesPerBlock, 16), 1);
  EXPECT_EQ(nvlsLaunchBlocks(kNvlsBytesPerBlock + 1, 16), 2);
  EXPECT_EQ(nvlsLaunchBlocks(size_t{1} << 30, 16), 16);
  EXPECT_EQ(nvlsLaunchBlocks(size_t{1} << 30, 100), kMaxNvlsBlocks);
  EXPECT_EQ(nvlsLaunchBlocks(size_t{1} << 30, 0), 1);
}

TEST(NvlsPlan, EveryByteIsMovedByOneBlockInOneRoundWithinItsArea) {
  const uint64_t sizes[] = {1,
                            15,
                            16,
                            17,
                            kNvlsAreaBytes - 1,
                            kNvlsAreaBytes,
                            kNvlsAreaBytes + 3,
                            5 * kNvlsAreaBytes + 100,
                            (uint64_t{64} << 20) + 12};
  for (uint64_t bytes : sizes) {
    const int blocks = nvlsLaunchBlocks(bytes, 16);
    const uint64_t pieceBytes = nvlsPieceBytes(bytes, blocks);
    std::vector<int> moved(bytes, 0);
    for (int block = 0; block < blocks; ++block) {
      const uint64_t rounds = nvlsRounds(bytes, pieceBytes, blocks, block);
      EXPECT_GE(rounds, 1u) << bytes << ": block " << block << " of " << blocks << " has no piece";
      for (uint64_t round = 0; round < rounds; ++round) {
        const NvlsPiece piece = nvlsPiece(bytes, pieceBytes, blocks, block, round);
        ASSERT_LT(piece.begin, piece.end) << bytes << " block " << block << " round " << round;
        ASSERT_LE(piece.end - piece.begin, kNvlsAreaBytes);
        for (uint64_t b = piece.begin; b < piece.end; ++b) ++moved[b];
      }
      const NvlsPiece after = nvlsPiece(bytes, pieceBytes, blocks, block, rounds);
      EXPECT_EQ(after.begin, after.end) << "a block's rounds end where its pieces do";
    }
    for (uint64_t b = 0; b < bytes; ++b) ASSERT_EQ(moved[b], 1) << "byte " << b << " of " << bytes;
  }
}

TEST(NvlsPlan, EveryWordOfAPieceIsReducedByOneRank) {
  for (int n = 2; n <= 8; ++n) {
    for (uint64_t bytes : {uint64_t{1}, uint64_t{16}, uint64_t{100}, uint64_t{4096}, kNvlsAreaBytes}) {
      uint64_t next = 0;
      for (int r = 0; r < n; ++r) {
        const algorithms::ElementRange words = nvlsRankWords(bytes, r, n);
        EXPECT_EQ(words.offset, next) << n << " ranks, " << bytes << " bytes, rank " << r;
        next = words.offset + words.count;
      }
      EXPECT_EQ(next, (bytes + 15) / 16);
    }
  }
}

TEST(NvlsPlan, TheBoundMemoryHoldsTheControlLinesAndEveryBlocksArea) {
  EXPECT_EQ(nvlsAreaOffset(0), kNvlsControlBytes);
  EXPECT_EQ(nvlsTeamBytes(16), kNvlsControlBytes + 16 * kNvlsAreaBytes);
  EXPECT_EQ(nvlsTeamBytes(kMaxNvlsBlocks + 5), nvlsTeamBytes(kMaxNvlsBlocks));
  EXPECT_EQ(kNvlsControlBytes % 16, 0u);
}

}  // namespace
}  // namespace weft::device
