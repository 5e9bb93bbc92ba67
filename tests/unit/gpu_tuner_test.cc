// The GPU allreduce's tuner: NVLS only where offered and allowed, the ring at two GPUs and NVLS at
// four and more under NCCL's constants, and NCCL_ALGO obeyed both ways.

#include "algorithms/gpu_tuner.h"

#include <gtest/gtest.h>

#include <cmath>

namespace weft::algorithms {
namespace {

AlgorithmFilter only(const char* names) {
  AlgorithmFilter filter = AlgorithmFilter::all();
  EXPECT_TRUE(parseAlgorithmFilter(names, &filter).isOk()) << names;
  return filter;
}

TEST(GpuTuner, NvlsIsChosenOnlyWhereTheTeamOffersIt) {
  Algorithm chosen = Algorithm::kTree;
  ASSERT_TRUE(chooseGpuAllReduce(8, size_t{1} << 30, false, AlgorithmFilter::all(), GpuCostModel{}, &chosen));
  EXPECT_EQ(chosen, Algorithm::kRing);
  ASSERT_TRUE(chooseGpuAllReduce(8, size_t{1} << 30, true, AlgorithmFilter::all(), GpuCostModel{}, &chosen));
  EXPECT_EQ(chosen, Algorithm::kNvls);
}

TEST(GpuTuner, TheRingWinsAtTwoGpusAndNvlsAtFourAndMore) {
  for (size_t bytes : {size_t{8}, size_t{1} << 20, size_t{1} << 30}) {
    Algorithm chosen = Algorithm::kTree;
    ASSERT_TRUE(chooseGpuAllReduce(2, bytes, true, AlgorithmFilter::all(), GpuCostModel{}, &chosen));
    EXPECT_EQ(chosen, Algorithm::kRing) << bytes;
    for (int n : {4, 8}) {
      ASSERT_TRUE(chooseGpuAllReduce(n, bytes, true, AlgorithmFilter::all(), GpuCostModel{}, &chosen));
      EXPECT_EQ(chosen, Algorithm::kNvls) << n << " GPUs, " << bytes;
    }
  }
  // Three GPUs: the ring's latency is below NVLS's, its bytes above.
  Algorithm chosen = Algorithm::kTree;
  ASSERT_TRUE(chooseGpuAllReduce(3, 1024, true, AlgorithmFilter::all(), GpuCostModel{}, &chosen));
  EXPECT_EQ(chosen, Algorithm::kRing);
  ASSERT_TRUE(chooseGpuAllReduce(3, size_t{256} << 20, true, AlgorithmFilter::all(), GpuCostModel{}, &chosen));
  EXPECT_EQ(chosen, Algorithm::kNvls);
}

TEST(GpuTuner, NcclAlgoIsObeyed) {
  Algorithm chosen = Algorithm::kTree;
  ASSERT_TRUE(chooseGpuAllReduce(8, size_t{1} << 30, true, only("ring"), GpuCostModel{}, &chosen));
  EXPECT_EQ(chosen, Algorithm::kRing);
  ASSERT_TRUE(chooseGpuAllReduce(2, 8, true, only("nvls"), GpuCostModel{}, &chosen));
  EXPECT_EQ(chosen, Algorithm::kNvls);
  EXPECT_FALSE(chooseGpuAllReduce(8, 8, false, only("nvls"), GpuCostModel{}, &chosen));
  EXPECT_FALSE(chooseGpuAllReduce(8, 8, true, only("tree"), GpuCostModel{}, &chosen));
}

TEST(GpuTuner, ATeamIsWorthMakingWhereNvlsCanBeChosen) {
  EXPECT_FALSE(nvlsCanBeChosen(2, AlgorithmFilter::all(), ProtocolFilter::all(), GpuCostModel{}))
      << "the ring wins at every size";
  EXPECT_TRUE(nvlsCanBeChosen(3, AlgorithmFilter::all(), ProtocolFilter::all(), GpuCostModel{}))
      << "NVLS wins for large sizes";
  EXPECT_TRUE(nvlsCanBeChosen(8, AlgorithmFilter::all(), ProtocolFilter::all(), GpuCostModel{}));
  EXPECT_TRUE(nvlsCanBeChosen(2, only("nvls"), ProtocolFilter::all(), GpuCostModel{})) << "NCCL_ALGO=nvls forces it";
  EXPECT_FALSE(nvlsCanBeChosen(8, only("ring"), ProtocolFilter::all(), GpuCostModel{}));
  ProtocolFilter lowLatencyOnly = ProtocolFilter::all();
  ASSERT_TRUE(parseProtocolFilter("ll", &lowLatencyOnly).isOk());
  EXPECT_FALSE(nvlsCanBeChosen(8, AlgorithmFilter::all(), lowLatencyOnly, GpuCostModel{})) << "NVLS moves Simple only";
}

TEST(GpuTuner, PredictionsFollowTheModel) {
  const GpuCostModel model;
  const double ring = predictGpuAllReduceMicroseconds(Algorithm::kRing, 4, 360'000'000, model);
  EXPECT_NEAR(ring, 8.4 + 6 * 3.4 + 1.5 * 1000, 1e-6);  // S / b is 1 ms
  const double nvls = predictGpuAllReduceMicroseconds(Algorithm::kNvls, 4, 300'000'000, model);
  EXPECT_NEAR(nvls, 23 + 1000, 1e-6);  // S / (5/6 b) is 1 ms
  EXPECT_TRUE(std::isinf(predictGpuAllReduceMicroseconds(Algorithm::kTree, 4, 8, model)));
}

}  // namespace
}  // namespace weft::algorithms
