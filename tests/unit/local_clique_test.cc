#include "src/device/local_clique.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace weft::device {
namespace {

struct FakeRank : LocalCliqueMember {
  explicit FakeRank(int number = 0) : number(number) {}
  ~FakeRank() override { leaveLocalClique(this); }  // a test that stopped early leaves no stale entry
  int rank() const override { return number; }
  int number;
  int ended = 0;
  std::string why;
  void endKernelsUnderLock(const Status& reason) override {
    ++ended;
    why = reason.message();
  }
};

TEST(LocalClique, AnAbortEndsTheOtherRanksOfItsCliqueOnItsGpuOnly) {
  FakeRank aborted, peer, otherGpu, otherClique;
  joinLocalClique(7, 0, 3, &aborted);
  joinLocalClique(7, 0, 3, &peer);
  joinLocalClique(7, 1, 3, &otherGpu);
  joinLocalClique(8, 0, 1, &otherClique);
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
  joinLocalClique(9, 0, 2, &aborted);
  joinLocalClique(9, 0, 2, &left);
  leaveLocalClique(&left);
  EXPECT_EQ(endLocalPeers(9, 0, &aborted, remoteError("gone")), 0);
  EXPECT_EQ(left.ended, 0);
  leaveLocalClique(&aborted);
}

// The names of freed leftovers, in order. Shared with the leftovers: the registry is the
// process's, so one that a failed test left kept may be freed by a later test.
using FreedList = std::shared_ptr<std::vector<std::string>>;

// Leftovers that say when they are freed.
struct FakeLeftovers : LocalCliqueLeftovers {
  FakeLeftovers(FreedList freed, std::string name) : freed(std::move(freed)), name(std::move(name)) {}
  ~FakeLeftovers() override { freed->push_back(name); }
  FreedList freed;
  std::string name;
};

// Hands leftovers named `name` of a rank of clique `cliqueId` to the registry.
void handOver(uint64_t cliqueId, const FreedList& freed, const char* name) {
  freeWhenCliqueHasLeft(cliqueId, std::make_unique<FakeLeftovers>(freed, name));
}

// `rank` of clique `cliqueId` leaves, handing over leftovers named `name`, as a destroyed rank
// does.
void leaveAndHandOver(FakeRank* rank, uint64_t cliqueId, const FreedList& freed, const char* name) {
  leaveLocalClique(rank);
  handOver(cliqueId, freed, name);
}

TEST(LocalClique, MemoryOfARankThatLeftStaysUntilItsCliqueHasLeftOnEveryGpu) {
  auto freed = std::make_shared<std::vector<std::string>>();
  FakeRank first, second, otherGpu;
  joinLocalClique(11, 0, 3, &first);
  joinLocalClique(11, 0, 3, &second);
  joinLocalClique(11, 1, 3, &otherGpu);
  leaveAndHandOver(&first, 11, freed, "first");
  leaveAndHandOver(&second, 11, freed, "second");
  EXPECT_TRUE(freed->empty());  // the other GPU's rank may still run kernels; the page tables' lock is shared
  leaveAndHandOver(&otherGpu, 11, freed, "other GPU");
  EXPECT_EQ(*freed, (std::vector<std::string>{"first", "second", "other GPU"}));
}

TEST(LocalClique, MemoryOfTheLastRankOfItsCliqueIsFreedAtOnce) {
  auto freed = std::make_shared<std::vector<std::string>>();
  FakeRank otherClique;
  joinLocalClique(13, 0, 1, &otherClique);
  handOver(12, freed, "alone");  // 13: one rank here, no threads
  EXPECT_EQ(*freed, std::vector<std::string>{"alone"});
  leaveLocalClique(&otherClique);
}

// The last rank of a split on its thread, while the parent's ranks, threads of this process, stay:
// a free would wait for the parent's kernels, which may wait for this thread's next launch. The
// split's memory waits for the parent's last rank here, whose own leftovers then take it along.
TEST(LocalClique, MemoryWaitsWhileACliqueOfThreadsStays) {
  auto freed = std::make_shared<std::vector<std::string>>();
  FakeRank parent0, parent1, split;
  joinLocalClique(21, 0, 2, &parent0);
  joinLocalClique(21, 0, 2, &parent1);
  joinLocalClique(22, 0, 1, &split);
  leaveAndHandOver(&split, 22, freed, "split");
  EXPECT_TRUE(freed->empty());
  leaveAndHandOver(&parent0, 21, freed, "parent 0");
  EXPECT_TRUE(freed->empty());
  leaveAndHandOver(&parent1, 21, freed, "parent 1");
  EXPECT_EQ(*freed, (std::vector<std::string>{"split", "parent 0", "parent 1"}));
}

// A communicator whose other rank here is still in init (not yet registered) counts as one of
// threads: its registered rank's kernel may already wait for the other's first launch.
TEST(LocalClique, ACommunicatorOfThreadsStillInInitHoldsOthersMemory) {
  auto freed = std::make_shared<std::vector<std::string>>();
  FakeRank early;
  joinLocalClique(25, 0, 2, &early);
  handOver(26, freed, "other");
  EXPECT_TRUE(freed->empty());
  leaveAndHandOver(&early, 25, freed, "early");
  EXPECT_EQ(*freed, (std::vector<std::string>{"other", "early"}));
}

// The last communicator of threads here spans hosts: its ranks free their own memory at once, and
// then what was kept for it.
TEST(LocalClique, KeptMemoryIsFreedOnceTheLastCommunicatorOfThreadsLeavesWithoutHandingAnyOver) {
  auto freed = std::make_shared<std::vector<std::string>>();
  FakeRank world0, world1;
  joinLocalClique(27, 0, 2, &world0);
  joinLocalClique(27, 1, 2, &world1);
  handOver(28, freed, "split");
  leaveLocalClique(&world0);
  freeKeptLeftovers();
  EXPECT_TRUE(freed->empty());  // world 1 stays
  leaveLocalClique(&world1);
  freeKeptLeftovers();
  EXPECT_EQ(*freed, std::vector<std::string>{"split"});
}

// A launch on `streams` holding `calls` collectives from number `firstCall` on.
Status claim(FakeRank* rank, std::vector<unsigned long long> streams, uint64_t firstCall, uint64_t calls = 1) {
  return claimStreams(rank, LaunchStreams{streams, firstCall, calls});
}

TEST(LocalClique, AStreamHoldingAPeersKernelOfACallNotYetLaunchedIsRefused) {
  FakeRank first(0), second(1);
  joinLocalClique(13, 0, 2, &first);
  joinLocalClique(13, 0, 2, &second);
  ASSERT_TRUE(claim(&first, {100, 101}, 0).isOk());
  const Status refused = claim(&second, {102, 101}, 0);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidUsage);
  EXPECT_NE(refused.message().find("ranks 0 and 1"), std::string::npos) << refused.message();
  EXPECT_NE(refused.message().find("same CUDA stream (id 101)"), std::string::npos) << refused.message();
  // Refused, it recorded nothing: 102 is free.
  EXPECT_TRUE(claim(&second, {102}, 0).isOk());
  // Streams may change hands from call to call: the kernel of call 0 on each waits for nothing
  // that is not launched.
  EXPECT_TRUE(claim(&first, {102}, 1).isOk());
  EXPECT_TRUE(claim(&second, {100}, 1).isOk());
  // A rank a launch ahead: its kernels of calls 2 and 3 wait for the other's.
  ASSERT_TRUE(claim(&first, {104}, 2, 2).isOk());
  EXPECT_FALSE(claim(&second, {104}, 2).isOk());
  EXPECT_TRUE(claim(&second, {105}, 2).isOk());
  EXPECT_FALSE(claim(&second, {104}, 3).isOk());
  EXPECT_TRUE(claim(&second, {104}, 4).isOk());
  // Send/Recv alone holds the next collective's number.
  ASSERT_TRUE(claim(&first, {106}, 4, 0).isOk());
  EXPECT_FALSE(claim(&second, {106}, 4, 0).isOk());
  // A launch that failed before its kernels holds nothing once withdrawn.
  withdrawLatestClaim(&first);
  EXPECT_TRUE(claim(&second, {106}, 4, 0).isOk());
  leaveLocalClique(&first);
  leaveLocalClique(&second);
}

TEST(LocalClique, StreamsAreClaimedWithinOneCliqueOnOneGpu) {
  FakeRank rank(0), otherGpu(1), otherClique(1), left(2);
  joinLocalClique(15, 0, 3, &rank);
  joinLocalClique(15, 1, 3, &otherGpu);
  joinLocalClique(16, 0, 1, &otherClique);
  joinLocalClique(15, 0, 3, &left);
  ASSERT_TRUE(claim(&left, {200}, 0).isOk());
  leaveLocalClique(&left);
  EXPECT_TRUE(claim(&otherGpu, {200}, 0).isOk());
  EXPECT_TRUE(claim(&otherClique, {200}, 0).isOk());
  EXPECT_TRUE(claim(&rank, {200}, 0).isOk());
  FakeRank stranger(3);
  EXPECT_EQ(claim(&stranger, {200}, 0).code(), StatusCode::kInternalError);
  for (FakeRank* member : {&rank, &otherGpu, &otherClique}) leaveLocalClique(member);
}

}  // namespace
}  // namespace weft::device
