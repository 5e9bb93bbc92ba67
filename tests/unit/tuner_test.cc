// The tuner's cost model (algorithms/tuner.h): tree depths, predictions that follow the formulas,
// and choices: the tree for small allreduces over many ranks, the ring for large ones and for two
// ranks, only what NCCL_ALGO allows.

#include "algorithms/tuner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace weft::algorithms {
namespace {

TuneShape allReduce(size_t bytes, int nranks, bool network = false, int channels = 1) {
  TuneShape shape;
  shape.collective = Collective::kAllReduce;
  shape.bytes = bytes;
  shape.nranks = nranks;
  shape.networkHops = network;
  shape.treeDepth = treeDepth(nranks);
  shape.channels = channels;
  return shape;
}

Algorithm chosen(const TuneShape& shape, const std::string& algo = "") {
  AlgorithmFilter filter;
  EXPECT_TRUE(parseAlgorithmFilter(algo, &filter).isOk());
  Algorithm algorithm = Algorithm::kPat;
  EXPECT_TRUE(chooseAlgorithm(shape, filter, CostModel{}, &algorithm));
  return algorithm;
}

TEST(Tuner, TreeDepthGrowsWithTheLogarithmOfTheRanks) {
  EXPECT_EQ(treeDepth(1), 0);
  EXPECT_EQ(treeDepth(2), 1);
  EXPECT_EQ(treeDepth(4), 2);  // 0 -> 2 -> 1, 3
  EXPECT_EQ(treeDepth(8), 3);
  for (int n : {16, 100, 1000}) {
    EXPECT_LE(treeDepth(n), static_cast<int>(std::ceil(std::log2(n))) + 1) << n;
    EXPECT_GE(treeDepth(n), static_cast<int>(std::floor(std::log2(n)))) << n;
  }
}

TEST(Tuner, PredictionsFollowTheModel) {
  CostModel model;
  model.sharedMemory = {2, 4};  // 2 us per step, 4 GB/s: 4000 bytes per us
  const TuneShape shape = allReduce(40000, 4);
  EXPECT_DOUBLE_EQ(predictMicroseconds(Algorithm::kRing, shape, model), 6 * 2 + 1.5 * 10);
  EXPECT_DOUBLE_EQ(predictMicroseconds(Algorithm::kTree, shape, model), 4 * 2 + 2.5 * 10);
  EXPECT_DOUBLE_EQ(predictMicroseconds(Algorithm::kTree, allReduce(40000, 4, false, 2), model), 4 * 2 + 2 * 10);
  EXPECT_TRUE(std::isinf(predictMicroseconds(Algorithm::kPat, shape, model)));
  TuneShape broadcast = shape;
  broadcast.collective = Collective::kBroadcast;
  EXPECT_DOUBLE_EQ(predictMicroseconds(Algorithm::kTree, broadcast, model), 2 * 2 + 2 * 10);
  EXPECT_DOUBLE_EQ(predictMicroseconds(Algorithm::kRing, broadcast, model), 3 * 2 + 0.75 * 10);
  TuneShape gather = shape;
  gather.collective = Collective::kAllGather;
  EXPECT_TRUE(std::isinf(predictMicroseconds(Algorithm::kTree, gather, model)));
}

TEST(Tuner, OverSeveralHostsEachKindOfHopCostsItsOwn) {
  CostModel model;
  model.sharedMemory = {2, 4};
  model.network = {50, 1};  // 1000 bytes per us
  // 8 ranks on 2 hosts: the ring's 8 hops are 2 over the network and 6 on shared memory.
  TuneShape shape = allReduce(8000, 8, true);
  shape.localRingHops = 6;
  shape.hostTreeDepth = 1;
  shape.localTreeDepth = 3;
  EXPECT_DOUBLE_EQ(predictMicroseconds(Algorithm::kRing, shape, model), 14 * (2 * 50 + 6 * 2) / 8.0 + 1.75 * 8);
  EXPECT_DOUBLE_EQ(predictMicroseconds(Algorithm::kTree, shape, model), 2 * (1 * 50 + 3 * 2) + 2.5 * 8);
  // Every hop over the network (every rank its own host): as before.
  EXPECT_DOUBLE_EQ(predictMicroseconds(Algorithm::kRing, allReduce(8000, 8, true), model), 14 * 50 + 1.75 * 8);
}

TEST(Tuner, SmallAllReducesOverManyRanksTakeTheTreeLargeOnesTheRing) {
  for (bool network : {false, true}) {
    EXPECT_EQ(chosen(allReduce(8, 8, network)), Algorithm::kTree);
    EXPECT_EQ(chosen(allReduce(4096, 16, network)), Algorithm::kTree);
    EXPECT_EQ(chosen(allReduce(64 << 20, 8, network)), Algorithm::kRing);
    EXPECT_EQ(chosen(allReduce(8, 2, network)), Algorithm::kRing);  // as many steps either way
  }
  EXPECT_EQ(chosen(allReduce(8, 1)), Algorithm::kRing);
}

TEST(Tuner, OnlyWhatNcclAlgoAllowsIsChosen) {
  EXPECT_EQ(chosen(allReduce(8, 8), "ring"), Algorithm::kRing);
  EXPECT_EQ(chosen(allReduce(64 << 20, 8), "tree"), Algorithm::kTree);
  EXPECT_EQ(chosen(allReduce(8, 8), "allreduce:^tree"), Algorithm::kRing);
  TuneShape broadcast = allReduce(8, 8);
  broadcast.collective = Collective::kBroadcast;
  EXPECT_EQ(chosen(broadcast), Algorithm::kTree);  // 3 steps down instead of 7 around
  broadcast.bytes = 64 << 20;
  EXPECT_EQ(chosen(broadcast), Algorithm::kRing);  // one tree sends twice what the ring does
  TuneShape allGather = allReduce(8, 8);
  allGather.collective = Collective::kAllGather;
  AlgorithmFilter filter;
  ASSERT_TRUE(parseAlgorithmFilter("tree", &filter).isOk());
  Algorithm algorithm;
  EXPECT_FALSE(chooseAlgorithm(allGather, filter, CostModel{}, &algorithm));  // Weft has no tree allgather
}

}  // namespace
}  // namespace weft::algorithms
