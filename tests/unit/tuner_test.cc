// The tuner's cost model (algorithms/tuner.h): tree depths, predictions that follow the formulas,
// and choices: the tree for small allreduces over many ranks, the ring for large ones and for two
// ranks, only what NCCL_ALGO allows.

#include "algorithms/tuner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace weft::algorithms {
namespace {

constexpr Protocol kSimple = Protocol::kSimple;

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

TuneChoice choice(const TuneShape& shape, const std::string& algo = "", const std::string& proto = "") {
  AlgorithmFilter algorithms;
  ProtocolFilter protocols;
  EXPECT_TRUE(parseAlgorithmFilter(algo, &algorithms).isOk());
  EXPECT_TRUE(parseProtocolFilter(proto, &protocols).isOk());
  TuneChoice chosen{Algorithm::kPat, Protocol::kLL128};
  EXPECT_TRUE(chooseAlgorithm(shape, algorithms, protocols, CostModel{}, &chosen));
  return chosen;
}

// The prediction for `algorithm` on every channel it can take.
double predictOnAll(Algorithm algorithm, Protocol protocol, const TuneShape& shape, const CostModel& model) {
  return predictMicroseconds(TuneChoice{algorithm, protocol, channelRange(algorithm, shape).most}, shape, model);
}

Algorithm chosen(const TuneShape& shape, const std::string& algo = "") { return choice(shape, algo).algorithm; }

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
  EXPECT_DOUBLE_EQ(predictOnAll(Algorithm::kRing, kSimple, shape, model), 6 * 2 + 1.5 * 10);
  EXPECT_DOUBLE_EQ(predictOnAll(Algorithm::kTree, kSimple, shape, model), 4 * 2 + 2.5 * 10);
  EXPECT_DOUBLE_EQ(predictOnAll(Algorithm::kTree, kSimple, allReduce(40000, 4, false, 2), model), 4 * 2 + 2 * 10);
  EXPECT_TRUE(std::isinf(predictOnAll(Algorithm::kPat, kSimple, shape, model)));
  TuneShape broadcast = shape;
  broadcast.collective = Collective::kBroadcast;
  EXPECT_DOUBLE_EQ(predictOnAll(Algorithm::kTree, kSimple, broadcast, model), 2 * 2 + 2 * 10);
  EXPECT_DOUBLE_EQ(predictOnAll(Algorithm::kRing, kSimple, broadcast, model), 3 * 2 + 0.75 * 10);
  TuneShape gather = shape;
  gather.collective = Collective::kAllGather;
  EXPECT_TRUE(std::isinf(predictOnAll(Algorithm::kTree, kSimple, gather, model)));
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
  EXPECT_DOUBLE_EQ(predictOnAll(Algorithm::kRing, kSimple, shape, model), 14 * (2 * 50 + 6 * 2) / 8.0 + 1.75 * 8);
  EXPECT_DOUBLE_EQ(predictOnAll(Algorithm::kTree, kSimple, shape, model), 2 * (1 * 50 + 3 * 2) + 2.5 * 8);
  // Broadcast and Reduce run the same trees turned to their root, one way.
  for (Collective rooted : {Collective::kBroadcast, Collective::kReduce}) {
    TuneShape oneWay = shape;
    oneWay.collective = rooted;
    EXPECT_DOUBLE_EQ(predictOnAll(Algorithm::kTree, kSimple, oneWay, model), (1 * 50 + 3 * 2) + 2 * 8);
  }
  // Every hop over the network (every rank its own host): as before.
  EXPECT_DOUBLE_EQ(predictOnAll(Algorithm::kRing, kSimple, allReduce(8000, 8, true), model), 14 * 50 + 1.75 * 8);
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
  EXPECT_EQ(chosen(allReduce(8, 8), "allreduce:^tree"), Algorithm::kRhd);
  EXPECT_EQ(chosen(allReduce(8, 8), "allreduce:^tree,rhd"), Algorithm::kRing);
  TuneShape broadcast = allReduce(8, 8);
  broadcast.collective = Collective::kBroadcast;
  EXPECT_EQ(chosen(broadcast), Algorithm::kTree);  // 3 steps down instead of 7 around
  broadcast.bytes = 64 << 20;
  EXPECT_EQ(chosen(broadcast), Algorithm::kRing);  // one tree sends twice what the ring does
  TuneShape reduce = allReduce(8, 8);  // the broadcast's mirror image
  reduce.collective = Collective::kReduce;
  EXPECT_EQ(chosen(reduce), Algorithm::kTree);
  TuneShape mirrored = reduce;
  mirrored.collective = Collective::kBroadcast;
  EXPECT_DOUBLE_EQ(predictOnAll(Algorithm::kTree, kSimple, reduce, CostModel{}),
                   predictOnAll(Algorithm::kTree, kSimple, mirrored, CostModel{}));
  reduce.bytes = 64 << 20;
  EXPECT_EQ(chosen(reduce), Algorithm::kRing);
  TuneShape allGather = allReduce(8, 8);
  allGather.collective = Collective::kAllGather;
  AlgorithmFilter filter;
  ASSERT_TRUE(parseAlgorithmFilter("tree", &filter).isOk());
  TuneChoice unused;
  EXPECT_FALSE(chooseAlgorithm(allGather, filter, ProtocolFilter::all(), CostModel{}, &unused));  // no tree allgather
}

TEST(Tuner, BruckAllGatherTakesLogarithmicStepsForTheRingsBytes) {
  CostModel model;
  model.sharedMemory = {2, 4};  // 4000 bytes per us
  TuneShape shape = allReduce(4000, 8);  // one rank's block: 1 us at the bandwidth
  shape.collective = Collective::kAllGather;
  EXPECT_DOUBLE_EQ(predictOnAll(Algorithm::kRing, kSimple, shape, model), 7 * 2 + 7 * 1.0);
  EXPECT_DOUBLE_EQ(predictOnAll(Algorithm::kPat, kSimple, shape, model), 3 * 2 + 7 * 1.0);
  shape.nranks = 5;  // ceil(log2 5) = 3 steps
  EXPECT_DOUBLE_EQ(predictOnAll(Algorithm::kPat, kSimple, shape, model), 3 * 2 + 4 * 1.0);
  // Where the last step (4 of 8 blocks) no longer fits one slot, its bytes cost 1.2x the ring's.
  shape.nranks = 8;
  shape.slotBytes = 4 * 4000;
  EXPECT_DOUBLE_EQ(predictOnAll(Algorithm::kPat, kSimple, shape, model), 3 * 2 + 7 * 1.0);
  shape.slotBytes = 4 * 4000 - 1;
  EXPECT_DOUBLE_EQ(predictOnAll(Algorithm::kPat, kSimple, shape, model), 3 * 2 + 1.2 * 7 * 1.0);
  shape.nranks = 5;  // the last step brings the one block the first two (4 blocks) did not
  shape.slotBytes = 4000;
  EXPECT_DOUBLE_EQ(predictOnAll(Algorithm::kPat, kSimple, shape, model), 3 * 2 + 4 * 1.0);
  EXPECT_TRUE(std::isinf(predictOnAll(Algorithm::kPat, kSimple, allReduce(4000, 8), model)));
  // Small blocks over 8 ranks take pat, large ones the ring; two ranks the ring (one step either way).
  TuneShape small = allReduce(1024, 8);
  small.collective = Collective::kAllGather;
  EXPECT_EQ(chosen(small), Algorithm::kPat);
  TuneShape large = small;
  large.bytes = 4 << 20;
  EXPECT_EQ(chosen(large), Algorithm::kRing);
  TuneShape two = small;
  two.nranks = 2;
  EXPECT_EQ(chosen(two), Algorithm::kRing);
  EXPECT_EQ(chosen(small, "^pat"), Algorithm::kRing);
}

TEST(Tuner, BruckReduceScatterCostsAsItsAllGather) {
  CostModel model;
  model.sharedMemory = {2, 4};
  TuneShape shape = allReduce(4000, 8);
  shape.collective = Collective::kReduceScatter;
  EXPECT_DOUBLE_EQ(predictOnAll(Algorithm::kRing, kSimple, shape, model), 7 * 2 + 7 * 1.0);
  EXPECT_DOUBLE_EQ(predictOnAll(Algorithm::kPat, kSimple, shape, model), 3 * 2 + 7 * 1.0);
  TuneShape small = allReduce(1024, 8);
  small.collective = Collective::kReduceScatter;
  EXPECT_EQ(chosen(small), Algorithm::kPat);
  small.bytes = 4 << 20;
  EXPECT_EQ(chosen(small), Algorithm::kRing);
}

TEST(Tuner, RecursiveHalvingDoublingTakesMidSizesOnOneHost) {
  CostModel model;
  model.sharedMemory = {2, 4};
  model.network = {50, 1};
  // 8 ranks: 6 exchanges of 1.1 steps, 2(7/8) S / b while the first exchange (S/2) fits a slot.
  TuneShape shape = allReduce(8000, 8);
  EXPECT_DOUBLE_EQ(predictOnAll(Algorithm::kRhd, kSimple, shape, model), 6 * 1.1 * 2 + 1.75 * 2);
  shape.slotBytes = 3999;  // then its bytes cost 1.2x
  EXPECT_DOUBLE_EQ(predictOnAll(Algorithm::kRhd, kSimple, shape, model), 6 * 1.1 * 2 + 1.2 * 1.75 * 2);
  // 6 ranks fold into 4: 4 exchanges and the hand-over and hand-back, which move S each.
  shape.nranks = 6;
  EXPECT_DOUBLE_EQ(predictOnAll(Algorithm::kRhd, kSimple, shape, model), 6 * 1.1 * 2 + 1.2 * 3.5 * 2);
  shape.slotBytes = 8000;
  EXPECT_DOUBLE_EQ(predictOnAll(Algorithm::kRhd, kSimple, shape, model), 6 * 1.1 * 2 + 3.5 * 2);
  // Over the network an exchange costs 1.7 steps.
  EXPECT_DOUBLE_EQ(predictOnAll(Algorithm::kRhd, kSimple, allReduce(8000, 8, true), model),
                   6 * 1.7 * 50 + 1.75 * 8);
  EXPECT_TRUE(std::isinf(predictOnAll(Algorithm::kRhd, kSimple, TuneShape{Collective::kBroadcast, 8, 8}, model)));
  // With the built-in constants: the tree below a few KiB, rhd at 128 KiB, the ring from 2 MiB;
  // over the network the tree keeps the mid sizes.
  EXPECT_EQ(chosen(allReduce(8, 8)), Algorithm::kTree);
  EXPECT_EQ(chosen(allReduce(128 << 10, 8)), Algorithm::kRhd);
  EXPECT_EQ(chosen(allReduce(2 << 20, 8)), Algorithm::kRing);
  EXPECT_EQ(chosen(allReduce(128 << 10, 8, true)), Algorithm::kTree);
}

TEST(Tuner, LowLatencyHopsCostTheirOwnConstants) {
  CostModel model;
  model.sharedMemory = {2, 4};
  model.sharedMemoryLL = {1, 2};  // 2000 bytes per us
  model.network = {50, 1};
  const TuneShape shape = allReduce(40000, 4);
  EXPECT_DOUBLE_EQ(predictOnAll(Algorithm::kRing, Protocol::kLL, shape, model), 6 * 1 + 1.5 * 20);
  EXPECT_DOUBLE_EQ(predictOnAll(Algorithm::kTree, Protocol::kLL, shape, model), 4 * 1 + 2.5 * 20);
  EXPECT_TRUE(std::isinf(predictOnAll(Algorithm::kRing, Protocol::kLL128, shape, model)));
  // Over the network LL pieces take Simple slots: the same cost as Simple.
  const TuneShape network = allReduce(40000, 4, true);
  EXPECT_DOUBLE_EQ(predictOnAll(Algorithm::kRing, Protocol::kLL, network, model),
                   predictOnAll(Algorithm::kRing, kSimple, network, model));
}

TEST(Tuner, LowLatencyWinsSmallOperationsOnlyWhereItsStepIsShorter) {
  AlgorithmFilter algorithms = AlgorithmFilter::all();
  ProtocolFilter protocols = ProtocolFilter::all();
  CostModel model;
  model.sharedMemory = {4, 5};
  model.sharedMemoryLL = {2, 1};  // a machine where the LL step measured shorter
  auto protocolFor = [&](const TuneShape& shape) {
    TuneChoice chosen;
    EXPECT_TRUE(chooseAlgorithm(shape, algorithms, protocols, model, &chosen));
    return chosen.protocol;
  };
  EXPECT_EQ(protocolFor(allReduce(8, 2)), Protocol::kLL);
  EXPECT_EQ(protocolFor(allReduce(8, 8)), Protocol::kLL);
  EXPECT_EQ(protocolFor(allReduce(64 << 20, 2)), Protocol::kSimple);
  EXPECT_EQ(protocolFor(allReduce(64 << 20, 8)), Protocol::kSimple);
  EXPECT_EQ(protocolFor(allReduce(8, 8, true)), Protocol::kSimple) << "no gain over the network: Simple on a tie";
  // The built-in constants: an LL step as long as a Simple one, so Simple at every size.
  for (size_t bytes : {size_t{8}, size_t{4096}, size_t{64} << 20}) {
    EXPECT_EQ(choice(allReduce(bytes, 8)).protocol, Protocol::kSimple) << bytes;
  }
}

TEST(Tuner, ChannelsCostAStepEachAndAddBandwidthUpToThePeak) {
  CostModel model;
  model.sharedMemory = {2, 1, 1, 4};  // one channel: 2 us a step, 1 GB/s; each more adds 1 us; 4 GB/s at most
  const TuneShape shape = allReduce(40000, 4, false, 8);
  // 6 steps of 2 + (k-1) us; 1.5 x 40000 bytes at min(k, 4) GB/s.
  EXPECT_DOUBLE_EQ(predictMicroseconds({Algorithm::kRing, kSimple, 1}, shape, model), 6 * 2 + 1.5 * 40);
  EXPECT_DOUBLE_EQ(predictMicroseconds({Algorithm::kRing, kSimple, 2}, shape, model), 6 * 3 + 1.5 * 20);
  EXPECT_DOUBLE_EQ(predictMicroseconds({Algorithm::kRing, kSimple, 8}, shape, model), 6 * 9 + 1.5 * 10);
  // The tree: a tree per channel, two at most.
  EXPECT_DOUBLE_EQ(predictMicroseconds({Algorithm::kTree, kSimple, 2}, shape, model), 4 * 3 + 2 * 20);
  // Over the network, the network's constants.
  model.network = {50, 1, 10, 0};  // channels add no bandwidth
  const TuneShape network = allReduce(40000, 4, true, 8);
  EXPECT_DOUBLE_EQ(predictMicroseconds({Algorithm::kRing, kSimple, 3}, network, model), 6 * 70 + 1.5 * 40);
  EXPECT_EQ(channelsToPeak(model), 4);
  EXPECT_EQ(channelsToPeak(CostModel{}), 1) << "the built-in constants: one channel reaches the peak";
}

TEST(Tuner, EachCallTakesTheChannelCountPredictedFastest) {
  CostModel model;
  model.sharedMemory = {2, 1, 1, 4};
  model.sharedMemoryLL = model.sharedMemory;
  const auto pick = [&](TuneShape shape, const std::string& algo) {
    AlgorithmFilter algorithms;
    EXPECT_TRUE(parseAlgorithmFilter(algo, &algorithms).isOk());
    TuneChoice chosen;
    EXPECT_TRUE(chooseAlgorithm(shape, algorithms, ProtocolFilter::all(), model, &chosen));
    return chosen;
  };
  // A small call keeps to one channel; a large one spreads to the peak (4), not beyond; 2 channels
  // win once the second's bandwidth saves more than its 6 steps' microseconds.
  EXPECT_EQ(pick(allReduce(4096, 4, false, 8), "ring").channels, 1);
  EXPECT_EQ(pick(allReduce(64 << 20, 4, false, 8), "ring").channels, 4);
  EXPECT_EQ(pick(allReduce(64 << 20, 4, false, 3), "ring").channels, 3) << "the communicator has 3";
  // 40000 B: 1 channel 72 us, 2: 48, 3: 6 x 4 + 20 = 44, 4: 6 x 5 + 15 = 45.
  EXPECT_EQ(pick(allReduce(40000, 4, false, 8), "ring").channels, 3);
  // NCCL_MIN_NCHANNELS is the fewest a spreading call takes.
  TuneShape atLeastThree = allReduce(8, 4, false, 8);
  atLeastThree.minChannels = 3;
  EXPECT_EQ(pick(atLeastThree, "ring").channels, 3);
  EXPECT_EQ(pick(atLeastThree, "tree").channels, 2) << "two trees at most";
  EXPECT_EQ(pick(atLeastThree, "rhd").channels, 1) << "rhd runs on channel 0";
  TuneShape gather = atLeastThree;
  gather.collective = Collective::kAllGather;
  EXPECT_EQ(pick(gather, "pat").channels, 1) << "pat runs on channel 0";
  // On a tie the fewer channels win: the built-in constants give a channel no bandwidth.
  model = CostModel{};
  EXPECT_EQ(pick(allReduce(64 << 20, 4, false, 8), "ring").channels, 1);
}

TEST(Tuner, ACommunicatorBuildsNcclMaxNChannelsElseWhatAddsBandwidth) {
  const auto bounds = [](int64_t min, int64_t max, const CostModel& model) {
    const ChannelBounds b = hostChannelBounds(min, max, model);
    return std::pair{b.built, b.fewestPerCall};
  };
  CostModel spreads;
  spreads.network = {50, 1, 10, 3.5};  // 4 channels reach 3.5 GB/s
  EXPECT_EQ(bounds(1, -1, CostModel{}), std::pair(1, 1));
  EXPECT_EQ(bounds(1, -1, spreads), std::pair(4, 1));
  EXPECT_EQ(bounds(1, 2, spreads), std::pair(2, 1)) << "NCCL_MAX_NCHANNELS wins";
  EXPECT_EQ(bounds(3, -1, CostModel{}), std::pair(3, 3));
  EXPECT_EQ(bounds(5, 2, CostModel{}), std::pair(5, 5)) << "never fewer than NCCL_MIN_NCHANNELS";
  EXPECT_EQ(bounds(100, 200, CostModel{}), std::pair(kMaxChannels, kMaxChannels));
  EXPECT_EQ(bounds(0, 0, CostModel{}), std::pair(1, 1));
}

TEST(Tuner, OnlyWhatNcclProtoAllowsIsChosen) {
  EXPECT_EQ(choice(allReduce(8, 2), "", "simple").protocol, Protocol::kSimple);
  EXPECT_EQ(choice(allReduce(64 << 20, 8), "", "ll").protocol, Protocol::kLL);
  const TuneChoice both = choice(allReduce(8, 8), "ring", "^simple");
  EXPECT_EQ(both.algorithm, Algorithm::kRing);
  EXPECT_EQ(both.protocol, Protocol::kLL);
  ProtocolFilter onlyLl128;
  ASSERT_TRUE(parseProtocolFilter("ll128", &onlyLl128).isOk());
  TuneChoice unused;
  EXPECT_FALSE(chooseAlgorithm(allReduce(8, 8), AlgorithmFilter::all(), onlyLl128, CostModel{}, &unused))
      << "Weft has no LL128";
}

}  // namespace
}  // namespace weft::algorithms
