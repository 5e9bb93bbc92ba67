#include "transport/shm/stream_trial.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>

namespace weft::transport::shm {
namespace {

using Policy = SlotStreamTrial::Policy;

constexpr size_t kBig = SlotStreamTrial::kMinBytes;
constexpr size_t kSmall = SlotStreamTrial::kProbeBytes - 1;
constexpr int kSlots = 8;
// Pieces that end a trial that the first piece starts: that one, the kSlots - 1 that first fill
// the other slots (none of them has held a piece to probe behind), then the pairs.
constexpr int kFirstTrialPieces = 1 + (kSlots - 1) + 2 * SlotStreamTrial::kTrialPairs;
// Pieces that end a later trial, every slot's last piece being big.
constexpr int kTrialPieces = 1 + 2 * SlotStreamTrial::kTrialPairs + 1;

/// Posts pieces the way a sender does, into a ring of kSlots slots: its slot probed where probes()
/// says so for the slot's last piece, the probe taking `cachedNanos` or `streamedNanos`, and the
/// piece written as streams() says; the clock advances 1 ms a piece.
class Sender {
 public:
  explicit Sender(SlotStreamTrial* trial) : trial_(trial) {}

  /// Posts `count` pieces of `bytes`; returns how many times a trial started or ended.
  int post(int count, int64_t cachedNanos, int64_t streamedNanos, size_t bytes = kBig) {
    int changes = 0;
    for (int i = 0; i < count; ++i, ++index_) {
      size_t& lastBytes = lastBytes_[index_ % kSlots];
      const bool probed = trial_->probes(lastBytes);
      const bool streamed = trial_->streams(index_, probed);
      const int64_t probe = probed ? (streamed ? streamedNanos : cachedNanos) : -1;
      lastBytes = bytes;
      now_ += 1'000'000;
      if (trial_->wants(bytes) && trial_->record(streamed, probe, now_)) ++changes;
    }
    return changes;
  }
  void wait(int64_t nanos) { now_ += nanos; }

 private:
  SlotStreamTrial* trial_;
  std::array<size_t, kSlots> lastBytes_{};
  uint64_t index_ = 0;
  int64_t now_ = 0;
};

TEST(SlotStreamTrial, ATrialWritesProbedPiecesCachedAtEvenPlacesAndStreamedAtOddOnes) {
  SlotStreamTrial trial(Policy::kMeasure);
  Sender sender(&trial);
  EXPECT_FALSE(trial.inTrial());
  EXPECT_FALSE(trial.probes(kBig));
  EXPECT_FALSE(trial.streams(1, false));
  EXPECT_EQ(sender.post(1, 1000, 100), 1);
  ASSERT_TRUE(trial.inTrial());
  EXPECT_FALSE(trial.streams(4, true));
  EXPECT_TRUE(trial.streams(5, true));
  EXPECT_FALSE(trial.streams(5, false)) << "an unprobed piece keeps the last choice";
}

TEST(SlotStreamTrial, OnlyBigPiecesStartATrial) {
  SlotStreamTrial trial(Policy::kMeasure);
  Sender sender(&trial);
  EXPECT_EQ(sender.post(100, 1000, 100, SlotStreamTrial::kMinBytes - 1), 0);
  EXPECT_FALSE(trial.inTrial());
  EXPECT_EQ(sender.post(1, 1000, 100), 1);
  EXPECT_TRUE(trial.inTrial());
}

TEST(SlotStreamTrial, ProbesOnlySlotsWhoseLastPieceFilledTheProbe) {
  SlotStreamTrial trial(Policy::kMeasure);
  Sender sender(&trial);
  sender.post(1, 1000, 100);
  EXPECT_FALSE(trial.probes(0));
  EXPECT_FALSE(trial.probes(SlotStreamTrial::kProbeBytes - 1));
  EXPECT_TRUE(trial.probes(SlotStreamTrial::kProbeBytes));
}

TEST(SlotStreamTrial, StreamsWhereStreamedWritesAreMuchFaster) {
  SlotStreamTrial trial(Policy::kMeasure);
  Sender sender(&trial);
  EXPECT_EQ(sender.post(kFirstTrialPieces, 9000, 1000), 2);
  EXPECT_FALSE(trial.inTrial());
  EXPECT_TRUE(trial.streamed());
  EXPECT_TRUE(trial.streams(0, false));
  EXPECT_TRUE(trial.streams(1, false));
  EXPECT_EQ(trial.decisions(), 1);
  EXPECT_NEAR(trial.lastRatio(), 1000.0 / 9000, 1e-9);
}

TEST(SlotStreamTrial, StaysCachedWhereStreamingGainsLessThanTheMargin) {
  // 0.6: the receiver's slower reads of streamed slots, which the sender does not see, may eat it.
  SlotStreamTrial trial(Policy::kMeasure);
  Sender sender(&trial);
  sender.post(kFirstTrialPieces, 1000, 600);
  EXPECT_FALSE(trial.inTrial());
  EXPECT_FALSE(trial.streamed());
  EXPECT_FALSE(trial.streams(1, false));
  EXPECT_NEAR(trial.lastRatio(), 0.6, 1e-9);
}

TEST(SlotStreamTrial, SlotsLastFilledBySmallPiecesAreNotProbed) {
  // The receiver read only the start of such a slot: small pieces keep a trial running, however
  // many pass, and it ends once big pieces come back.
  SlotStreamTrial trial(Policy::kMeasure);
  Sender sender(&trial);
  sender.post(1, 9000, 1000);
  EXPECT_EQ(sender.post(500, 9000, 1000, kSmall), 0);
  EXPECT_TRUE(trial.inTrial());
  EXPECT_EQ(sender.post(kSlots + 2 * SlotStreamTrial::kTrialPairs + 1, 9000, 1000), 1);
  EXPECT_TRUE(trial.streamed());
}

TEST(SlotStreamTrial, GivesUpATrialThatBigPiecesStoppedFeeding) {
  SlotStreamTrial trial(Policy::kMeasure);
  Sender sender(&trial);
  sender.post(kFirstTrialPieces, 9000, 1000);
  ASSERT_TRUE(trial.streamed());
  sender.wait(SlotStreamTrial::kRetrialNanos);
  EXPECT_EQ(sender.post(1, 1000, 9000), 1);
  ASSERT_TRUE(trial.inTrial());
  // Small pieces only, 1 ms apart: after a second the trial gives up and the choice stands.
  EXPECT_EQ(sender.post(1001, 1000, 9000, kSmall), 1);
  EXPECT_FALSE(trial.inTrial());
  EXPECT_TRUE(trial.streamed());
  EXPECT_EQ(trial.decisions(), 1);
  EXPECT_EQ(sender.post(100, 1000, 9000), 0) << "the next trial waits a second";
  sender.wait(SlotStreamTrial::kRetrialNanos);
  EXPECT_EQ(sender.post(kTrialPieces, 1000, 9000), 2);
  EXPECT_FALSE(trial.streamed());
  EXPECT_EQ(trial.decisions(), 2);
}

TEST(SlotStreamTrial, NeedsEveryPairBeforeDeciding) {
  SlotStreamTrial trial(Policy::kMeasure);
  Sender sender(&trial);
  sender.post(kFirstTrialPieces - 1, 9000, 1000);
  EXPECT_TRUE(trial.inTrial());
  EXPECT_EQ(trial.lastRatio(), 0);
}

TEST(SlotStreamTrial, AFewOutlyingPairsDoNotDecide) {
  // Three of eight cached probes were preempted (100x slower): the median still says cached.
  SlotStreamTrial trial(Policy::kMeasure);
  int64_t now = 0;
  trial.record(false, -1, now += 1000);  // starts the trial
  for (int pair = 0; pair < SlotStreamTrial::kTrialPairs; ++pair) {
    trial.record(false, pair < 3 ? 100'000 : 1000, now += 1000);
    trial.record(true, 1200, now += 1000);
  }
  EXPECT_FALSE(trial.inTrial());
  EXPECT_FALSE(trial.streamed());
}

TEST(SlotStreamTrial, PairsACachedProbeOnlyWithTheStreamedProbeRightAfterIt) {
  SlotStreamTrial trial(Policy::kMeasure);
  int64_t now = 0;
  trial.record(false, -1, now += 1000);  // starts the trial
  trial.record(true, 10, now += 1000);   // no cached probe before it: no pair
  trial.record(false, 1000, now += 1000);
  trial.record(true, -1, now += 1000);  // not probed: no pair
  trial.record(true, 10, now += 1000);  // its cached neighbour was the unprobed piece: no pair
  trial.record(false, 1000, now += 1000);
  trial.record(false, -1, now += 1000);  // not probed: the cached probe before it loses its turn
  trial.record(true, 10, now += 1000);
  for (int pair = 0; pair < SlotStreamTrial::kTrialPairs - 1; ++pair) {
    trial.record(false, 1000, now += 1000);
    trial.record(true, 900, now += 1000);
  }
  ASSERT_TRUE(trial.inTrial()) << "7 pairs so far";
  trial.record(false, 1000, now += 1000);
  EXPECT_TRUE(trial.record(true, 900, now += 1000));
  EXPECT_FALSE(trial.streamed());
  EXPECT_NEAR(trial.lastRatio(), 0.9, 1e-9);
}

TEST(SlotStreamTrial, TriesAgainEverySecondAndFollowsAChange) {
  SlotStreamTrial trial(Policy::kMeasure);
  Sender sender(&trial);
  sender.post(kFirstTrialPieces, 1000, 1300);
  ASSERT_FALSE(trial.inTrial());
  ASSERT_FALSE(trial.streamed());
  EXPECT_EQ(sender.post(100, 9000, 1000), 0) << "no trial within the second";
  sender.wait(SlotStreamTrial::kRetrialNanos);
  EXPECT_EQ(sender.post(kTrialPieces, 9000, 1000), 2);
  EXPECT_TRUE(trial.streamed()) << "the cores moved apart";
  sender.wait(SlotStreamTrial::kRetrialNanos);
  EXPECT_EQ(sender.post(kTrialPieces, 1000, 1300), 2);
  EXPECT_FALSE(trial.streamed()) << "and back together";
}

TEST(SlotStreamTrial, FixedPoliciesNeverTry) {
  for (Policy policy : {Policy::kCached, Policy::kStreamed}) {
    SlotStreamTrial trial(policy);
    const bool streamed = policy == Policy::kStreamed;
    EXPECT_EQ(trial.streamed(), streamed);
    EXPECT_FALSE(trial.wants(kBig));
    Sender sender(&trial);
    sender.wait(10 * SlotStreamTrial::kRetrialNanos);
    EXPECT_EQ(sender.post(100, 9000, 1000), 0);
    EXPECT_FALSE(trial.inTrial());
    EXPECT_EQ(trial.streams(0, false), streamed);
    EXPECT_EQ(trial.streams(1, false), streamed);
  }
}

TEST(SlotStreamTrial, NamesTheWrites) {
  EXPECT_STREQ(slotWritesName(true), "with non-temporal stores");
  EXPECT_STREQ(slotWritesName(false), "through the caches");
}

}  // namespace
}  // namespace weft::transport::shm
