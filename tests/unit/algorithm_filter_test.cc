// NCCL_ALGO's syntax (algorithms/algorithm_filter.h): lists, exclusions, per-collective clauses,
// any case, and the errors for names that are not algorithms or collectives.

#include "algorithms/algorithm_filter.h"

#include <gtest/gtest.h>

#include <string>

namespace weft::algorithms {
namespace {

AlgorithmFilter parsed(const std::string& text) {
  AlgorithmFilter filter;
  const Status status = parseAlgorithmFilter(text, &filter);
  EXPECT_TRUE(status.isOk()) << text << ": " << status.message();
  return filter;
}

TEST(AlgorithmFilter, UnsetAllowsEverything) {
  const AlgorithmFilter filter = parsed("");
  for (int a = 0; a < kNumAlgorithms; ++a) {
    EXPECT_TRUE(filter.allows(Collective::kAllReduce, static_cast<Algorithm>(a)));
    EXPECT_TRUE(filter.allows(Collective::kBroadcast, static_cast<Algorithm>(a)));
  }
}

TEST(AlgorithmFilter, AListAllowsOnlyItsAlgorithmsForEveryCollective) {
  const AlgorithmFilter filter = parsed("Tree, RHD");
  EXPECT_TRUE(filter.allows(Collective::kAllReduce, Algorithm::kTree));
  EXPECT_TRUE(filter.allows(Collective::kReduce, Algorithm::kRhd));
  EXPECT_FALSE(filter.allows(Collective::kAllReduce, Algorithm::kRing));
  EXPECT_FALSE(filter.allows(Collective::kAllGather, Algorithm::kRing));
}

TEST(AlgorithmFilter, ACaretExcludes) {
  const AlgorithmFilter filter = parsed("^tree,pat");
  EXPECT_FALSE(filter.allows(Collective::kAllReduce, Algorithm::kTree));
  EXPECT_FALSE(filter.allows(Collective::kAllGather, Algorithm::kPat));
  EXPECT_TRUE(filter.allows(Collective::kAllReduce, Algorithm::kRing));
  EXPECT_TRUE(filter.allows(Collective::kAllReduce, Algorithm::kNvls));
}

TEST(AlgorithmFilter, ClausesSetTheirCollectivesAndLeaveTheOthersAlone) {
  const AlgorithmFilter filter = parsed("allreduce:tree;Broadcast:^ring");
  EXPECT_TRUE(filter.allows(Collective::kAllReduce, Algorithm::kTree));
  EXPECT_FALSE(filter.allows(Collective::kAllReduce, Algorithm::kRing));
  EXPECT_FALSE(filter.allows(Collective::kBroadcast, Algorithm::kRing));
  EXPECT_TRUE(filter.allows(Collective::kBroadcast, Algorithm::kTree));
  EXPECT_TRUE(filter.allows(Collective::kAllGather, Algorithm::kRing));
  EXPECT_TRUE(filter.allows(Collective::kReduceScatter, Algorithm::kTree));
}

TEST(AlgorithmFilter, UnknownNamesAndEmptyChoicesAreInvalidArgumentsThatSayWhatIsValid) {
  AlgorithmFilter filter;
  for (const char* text : {"ring,bogus", "allreduce:ring;alltoall:ring", "allreduce",
                           "allreduce:^ring,tree,collnetdirect,collnetchain,nvls,nvlstree,pat,rhd"}) {
    const Status status = parseAlgorithmFilter(text, &filter);
    ASSERT_FALSE(status.isOk()) << text;
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(status.message().find("NCCL_ALGO="), std::string::npos) << status.message();
    EXPECT_NE(status.message().find("ring, tree"), std::string::npos) << status.message();
  }
}

}  // namespace
}  // namespace weft::algorithms
