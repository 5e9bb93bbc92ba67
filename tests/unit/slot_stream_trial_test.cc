#include "transport/shm/stream_trial.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace weft::transport::shm {
namespace {

using Policy = SlotStreamTrial::Policy;

constexpr size_t kBig = SlotStreamTrial::kMinBytes;
constexpr size_t kSmall = SlotStreamTrial::kMinBytes - 1;
// Pieces that end a trial wherever it starts: one more than its pairs, since a trial that starts
// at an odd (streamed) place has no cached probe before that one.
constexpr int kTrialPieces = 2 * SlotStreamTrial::kTrialPairs + 1;

/// Posts pieces into a trial the way a sender does: each piece is written as streams() says for
/// its place in the stream, and probed while probing() says so, the probe taking `cachedNanos` or
/// `streamedNanos`; the clock advances 1 ms a piece.
class Sender {
 public:
  explicit Sender(SlotStreamTrial* trial) : trial_(trial) {}

  /// Posts `count` pieces of `bytes`; returns how many times a trial started or ended.
  int post(int count, int64_t cachedNanos, int64_t streamedNanos, size_t bytes = kBig) {
    int changes = 0;
    for (int i = 0; i < count; ++i) {
      const bool streamed = trial_->streams(index_++);
      const int64_t probe = trial_->probing() ? (streamed ? streamedNanos : cachedNanos) : -1;
      now_ += 1'000'000;
      if (trial_->wants(bytes) && trial_->record(streamed, bytes, probe, now_)) ++changes;
    }
    return changes;
  }
  void wait(int64_t nanos) { now_ += nanos; }

 private:
  SlotStreamTrial* trial_;
  uint64_t index_ = 0;
  int64_t now_ = 0;
};

TEST(SlotStreamTrial, ATrialWritesEvenPlacesCachedAndOddOnesStreamed) {
  SlotStreamTrial trial(Policy::kMeasure, 0);
  ASSERT_TRUE(trial.probing());
  EXPECT_FALSE(trial.streams(4));
  EXPECT_TRUE(trial.streams(5));
}

TEST(SlotStreamTrial, WarmsUpThroughTheCachesOnBigPiecesThenTries) {
  SlotStreamTrial trial(Policy::kMeasure, 4);
  Sender sender(&trial);
  EXPECT_FALSE(trial.probing());
  EXPECT_FALSE(trial.streams(1));
  EXPECT_EQ(sender.post(100, 1000, 100, kSmall), 0) << "small pieces do not warm up";
  EXPECT_EQ(sender.post(3, 1000, 100), 0);
  EXPECT_FALSE(trial.probing());
  EXPECT_EQ(sender.post(1, 1000, 100), 1);
  EXPECT_TRUE(trial.probing());
}

TEST(SlotStreamTrial, StreamsWhereStreamedWritesAreMuchFaster) {
  SlotStreamTrial trial(Policy::kMeasure, 0);
  Sender sender(&trial);
  EXPECT_EQ(sender.post(kTrialPieces, 9000, 1000), 1);
  EXPECT_FALSE(trial.probing());
  EXPECT_TRUE(trial.streamed());
  EXPECT_TRUE(trial.streams(0));
  EXPECT_TRUE(trial.streams(1));
  EXPECT_NEAR(trial.lastRatio(), 1000.0 / 9000, 1e-9);
}

TEST(SlotStreamTrial, StaysCachedWhereStreamingGainsLessThanTheMargin) {
  // 0.6: the receiver's slower reads of streamed slots, which the sender does not see, may eat it.
  SlotStreamTrial trial(Policy::kMeasure, 0);
  Sender sender(&trial);
  sender.post(kTrialPieces, 1000, 600);
  EXPECT_FALSE(trial.streamed());
  EXPECT_FALSE(trial.streams(1));
  EXPECT_NEAR(trial.lastRatio(), 0.6, 1e-9);
}

TEST(SlotStreamTrial, SmallPiecesCountTowardsARunningTrial) {
  SlotStreamTrial trial(Policy::kMeasure, 0);
  Sender sender(&trial);
  EXPECT_EQ(sender.post(kTrialPieces, 9000, 1000, 64), 1);
  EXPECT_TRUE(trial.streamed());
}

TEST(SlotStreamTrial, NeedsEveryPairBeforeDeciding) {
  SlotStreamTrial trial(Policy::kMeasure, 0);
  Sender sender(&trial);
  sender.post(2 * SlotStreamTrial::kTrialPairs - 1, 9000, 1000);
  EXPECT_TRUE(trial.probing());
  EXPECT_EQ(trial.lastRatio(), 0);
}

TEST(SlotStreamTrial, AFewOutlyingPairsDoNotDecide) {
  // Three of eight cached probes were preempted (100x slower): the median still says cached.
  SlotStreamTrial trial(Policy::kMeasure, 0);
  int64_t now = 0;
  for (int pair = 0; pair < SlotStreamTrial::kTrialPairs; ++pair) {
    trial.record(false, kBig, pair < 3 ? 100'000 : 1000, now += 1000);
    trial.record(true, kBig, 1200, now += 1000);
  }
  EXPECT_FALSE(trial.probing());
  EXPECT_FALSE(trial.streamed());
}

TEST(SlotStreamTrial, PairsACachedProbeOnlyWithTheStreamedProbeRightAfterIt) {
  SlotStreamTrial trial(Policy::kMeasure, 0);
  int64_t now = 0;
  trial.record(true, kBig, 10, now += 1000);  // no cached probe before it: no pair
  trial.record(false, kBig, 1000, now += 1000);
  trial.record(false, kBig, -1, now += 1000);  // not probed: no pair either
  trial.record(true, kBig, 10, now += 1000);
  for (int pair = 0; pair < SlotStreamTrial::kTrialPairs - 1; ++pair) {
    trial.record(false, kBig, 1000, now += 1000);
    trial.record(true, kBig, 900, now += 1000);
  }
  ASSERT_TRUE(trial.probing()) << "7 pairs so far";
  trial.record(false, kBig, 1000, now += 1000);
  EXPECT_TRUE(trial.record(true, kBig, 900, now += 1000));
  EXPECT_FALSE(trial.streamed());
  EXPECT_NEAR(trial.lastRatio(), 0.9, 1e-9);
}

TEST(SlotStreamTrial, TriesAgainEverySecondAndFollowsAChange) {
  SlotStreamTrial trial(Policy::kMeasure, 0);
  Sender sender(&trial);
  sender.post(kTrialPieces, 1000, 1300);
  ASSERT_FALSE(trial.streamed());
  EXPECT_EQ(sender.post(100, 9000, 1000), 0) << "no trial within the second";
  sender.wait(SlotStreamTrial::kRetrialNanos);
  EXPECT_EQ(sender.post(1, 9000, 1000), 1);
  EXPECT_TRUE(trial.probing());
  sender.post(kTrialPieces, 9000, 1000);
  EXPECT_TRUE(trial.streamed()) << "the cores moved apart";
  sender.wait(SlotStreamTrial::kRetrialNanos);
  sender.post(1 + kTrialPieces, 1000, 1300);
  EXPECT_FALSE(trial.streamed()) << "and back together";
}

TEST(SlotStreamTrial, OnlyBigPiecesStartTheNextTrial) {
  SlotStreamTrial trial(Policy::kMeasure, 0);
  Sender sender(&trial);
  sender.post(kTrialPieces, 1000, 1300);
  sender.wait(10 * SlotStreamTrial::kRetrialNanos);
  EXPECT_EQ(sender.post(100, 9000, 1000, kSmall), 0);
  EXPECT_FALSE(trial.probing());
  EXPECT_EQ(sender.post(1, 9000, 1000), 1);
}

TEST(SlotStreamTrial, FixedPoliciesNeverTry) {
  for (Policy policy : {Policy::kCached, Policy::kStreamed}) {
    SlotStreamTrial trial(policy, 0);
    const bool streamed = policy == Policy::kStreamed;
    EXPECT_EQ(trial.streamed(), streamed);
    EXPECT_FALSE(trial.wants(kBig));
    Sender sender(&trial);
    sender.wait(10 * SlotStreamTrial::kRetrialNanos);
    EXPECT_EQ(sender.post(100, 9000, 1000), 0);
    EXPECT_FALSE(trial.probing());
    EXPECT_EQ(trial.streams(0), streamed);
    EXPECT_EQ(trial.streams(1), streamed);
  }
}

}  // namespace
}  // namespace weft::transport::shm
