#include "src/device/local_clique.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

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

// Leftovers that say when they are freed.
struct FakeLeftovers : LocalCliqueLeftovers {
  explicit FakeLeftovers(std::vector<std::string>* freed, std::string name) : freed(freed), name(std::move(name)) {}
  ~FakeLeftovers() override { freed->push_back(name); }
  std::vector<std::string>* freed;
  std::string name;
};

TEST(LocalClique, MemoryOfARankThatLeftStaysUntilItsCliqueHasLeftOnEveryGpu) {
  std::vector<std::string> freed;
  FakeRank first, second, otherGpu;
  joinLocalClique(11, 0, &first);
  joinLocalClique(11, 0, &second);
  joinLocalClique(11, 1, &otherGpu);
  leaveLocalClique(&first);
  freeWhenCliqueHasLeft(11, std::make_unique<FakeLeftovers>(&freed, "first"));
  leaveLocalClique(&second);
  freeWhenCliqueHasLeft(11, std::make_unique<FakeLeftovers>(&freed, "second"));
  EXPECT_TRUE(freed.empty());  // a rank on the other GPU may still run kernels, and the page tables' lock is shared
  leaveLocalClique(&otherGpu);
  freeWhenCliqueHasLeft(11, std::make_unique<FakeLeftovers>(&freed, "other GPU"));
  EXPECT_EQ(freed, (std::vector<std::string>{"first", "second", "other GPU"}));
}

TEST(LocalClique, MemoryOfTheLastRankOfItsCliqueIsFreedAtOnce) {
  std::vector<std::string> freed;
  FakeRank otherClique;
  joinLocalClique(13, 0, &otherClique);
  freeWhenCliqueHasLeft(12, std::make_unique<FakeLeftovers>(&freed, "alone"));  // clique 13 is another
  EXPECT_EQ(freed, std::vector<std::string>{"alone"});
  leaveLocalClique(&otherClique);
}

}  // namespace
}  // namespace weft::device
