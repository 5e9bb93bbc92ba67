#include "src/device/local_clique.h"

#include <gtest/gtest.h>

#include <string>

namespace weft::device {
namespace {

struct FakeRank : LocalCliqueMember {
  int ended = 0;
  std::string why;
  void endKernels(const Status& reason) override {
    ++ended;
    why = reason.message();
  }
};

TEST(LocalClique, AnAbortEndsTheOtherRanksOfItsCliqueOnItsGpuOnly) {
  FakeRank aborted, peer, otherGpu, otherClique;
  joinLocalClique(7, 0, &aborted);
  joinLocalClique(7, 0, &peer);
  joinLocalClique(7, 1, &otherGpu);
  joinLocalClique(8, 0, &otherClique);
  EXPECT_EQ(endLocalPeers(7, 0, &aborted, remoteError("rank 0 was aborted")), 1);
  EXPECT_EQ(aborted.ended, 0);
  EXPECT_EQ(peer.ended, 1);
  EXPECT_EQ(peer.why, "rank 0 was aborted");
  EXPECT_EQ(otherGpu.ended, 0);
  EXPECT_EQ(otherClique.ended, 0);
  for (FakeRank* rank : {&aborted, &peer, &otherGpu, &otherClique}) leaveLocalClique(rank);
}

TEST(LocalClique, ARankThatLeftIsNotReached) {
  FakeRank aborted, left;
  joinLocalClique(9, 0, &aborted);
  joinLocalClique(9, 0, &left);
  leaveLocalClique(&left);
  EXPECT_EQ(endLocalPeers(9, 0, &aborted, remoteError("gone")), 0);
  EXPECT_EQ(left.ended, 0);
  leaveLocalClique(&aborted);
}

}  // namespace
}  // namespace weft::device
