// Tests of the buffer counts that must match nccl-tests': the 16-byte rounding of the per-rank
// blocks and alltoallv_perf's uneven per-peer counts.

#include <gtest/gtest.h>

#include <cstddef>

#include "perf/common/alltoallv_counts.h"
#include "perf/common/collective.h"

namespace weft::perf {
namespace {

TEST(RankBlockCount, RoundsEachRanksShareDownTo16Bytes) {
  // -b 64 on 3 ranks: 21 int8 per rank become 16, 5 floats 4, 2 doubles stay 2, 10 halves 8.
  EXPECT_EQ(rankBlockCount(64, 1, 3), 16u);
  EXPECT_EQ(rankBlockCount(16, 4, 3), 4u);
  EXPECT_EQ(rankBlockCount(8, 8, 3), 2u);
  EXPECT_EQ(rankBlockCount(32, 2, 3), 8u);
  // Too small to give every rank 16 bytes: nothing.
  EXPECT_EQ(rankBlockCount(2, 4, 2), 0u);
  EXPECT_EQ(rankBlockCount(31, 1, 2), 0u);
  // Already aligned shares are kept.
  EXPECT_EQ(rankBlockCount(1 << 20, 4, 4), (1u << 20) / 4);
}

TEST(RankBlockCount, MatchesNcclTestsMaskOnEverySmallCount) {
  // nccl-tests' own expression: (count/nranks) & -(16/eltSize).
  for (size_t elementSize : {1, 2, 4, 8}) {
    for (int nranks = 1; nranks <= 9; ++nranks) {
      for (size_t count = 0; count < 4096; ++count) {
        const size_t reference = (count / static_cast<size_t>(nranks)) & -(16 / elementSize);
        ASSERT_EQ(rankBlockCount(count, elementSize, nranks), reference)
            << count << " elements of " << elementSize << " bytes over " << nranks << " ranks";
      }
    }
  }
}

TEST(AlltoallvCounts, BlocksFillTheBufferAndPairsAgree) {
  for (int nranks = 1; nranks <= 9; ++nranks) {
    for (size_t block : {0, 1, 2, 7, 16, 1000, 4096}) {
      for (int rank = 0; rank < nranks; ++rank) {
        size_t total = 0;
        for (int peer = 0; peer < nranks; ++peer) {
          const size_t count = alltoallvPeerCount(block, rank, peer, nranks);
          // What rank sends to peer is what peer expects from rank.
          ASSERT_EQ(count, alltoallvPeerCount(block, peer, rank, nranks));
          ASSERT_EQ(alltoallvPeerOffset(block, rank, peer, nranks), total);
          total += count;
        }
        ASSERT_EQ(total, block * static_cast<size_t>(nranks))
            << "rank " << rank << " of " << nranks << ", block " << block;
      }
    }
  }
}

TEST(AlltoallvCounts, UnevenAsTheAlltoAllvTestDefinesIt) {
  // 4 ranks, block 16: chunk 8; rank 1 sends 8, 16, 24 to peers 0, 1, 2 and the rest, 16, to 3.
  EXPECT_EQ(alltoallvPeerCount(16, 1, 0, 4), 8u);
  EXPECT_EQ(alltoallvPeerCount(16, 1, 1, 4), 16u);
  EXPECT_EQ(alltoallvPeerCount(16, 1, 2, 4), 24u);
  EXPECT_EQ(alltoallvPeerCount(16, 1, 3, 4), 16u);
  EXPECT_EQ(alltoallvPeerOffset(16, 1, 3, 4), 48u);
  // Rank 0 sends the rest (64 - 48 = 16) to itself.
  EXPECT_EQ(alltoallvPeerCount(16, 0, 0, 4), 16u);
}

}  // namespace
}  // namespace weft::perf
