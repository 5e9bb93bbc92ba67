#include "src/core/gpu_stall_watch.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace weft::core {
namespace {

using Clock = GpuStallClock::Clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

GpuBlockProgress block(uint64_t kernel, BlockActivity activity, uint64_t seen = 0) {
  GpuBlockProgress record;
  record.kernel = kernel;
  record.activity = static_cast<uint32_t>(activity);
  record.peer = 1;
  record.channel = 0;
  record.steps = 3;
  record.seen = seen;
  record.wanted = seen + 1;
  return record;
}

class GpuStallClockTest : public ::testing::Test {
 protected:
  std::vector<GpuBlockProgress> blocks_ = std::vector<GpuBlockProgress>(kRecordedBlocks);
  GpuStallClock clock_;
  Clock::time_point start_ = Clock::now();
};

TEST_F(GpuStallClockTest, CountsFromTheFirstLookThatShowsABlockStuckInAWait) {
  blocks_[0] = block(2, BlockActivity::kDone);
  blocks_[1] = block(2, BlockActivity::kReceiving, 4);
  EXPECT_EQ(clock_.look(blocks_.data(), start_), Clock::duration::zero());
  EXPECT_EQ(clock_.look(blocks_.data(), start_ + seconds(1)), seconds(1));
  EXPECT_EQ(clock_.look(blocks_.data(), start_ + seconds(3)), seconds(3));
}

TEST_F(GpuStallClockTest, AChangedRecordRestartsTheCount) {
  blocks_[0] = block(2, BlockActivity::kReceiving, 4);
  clock_.look(blocks_.data(), start_);
  EXPECT_EQ(clock_.look(blocks_.data(), start_ + seconds(2)), seconds(2));
  blocks_[0].seen = 5;  // the peer posted, not yet enough
  EXPECT_EQ(clock_.look(blocks_.data(), start_ + seconds(3)), Clock::duration::zero());
  EXPECT_EQ(clock_.look(blocks_.data(), start_ + seconds(4)), seconds(1));
  blocks_[0] = block(3, BlockActivity::kSending, 4);  // the next kernel waits elsewhere
  EXPECT_EQ(clock_.look(blocks_.data(), start_ + seconds(5)), Clock::duration::zero());
}

TEST_F(GpuStallClockTest, KernelsThatRunOrHaveNotStartedAreNeverStuck) {
  blocks_[0] = block(2, BlockActivity::kReceiving, 4);
  blocks_[1] = block(2, BlockActivity::kRunning);  // it computes, or its waits end before they are recorded
  clock_.look(blocks_.data(), start_);
  EXPECT_EQ(clock_.look(blocks_.data(), start_ + seconds(60)), Clock::duration::zero());
  blocks_[0] = block(2, BlockActivity::kDone);
  blocks_[1] = block(2, BlockActivity::kDone);  // the next kernel waits behind the stream's earlier work
  clock_.look(blocks_.data(), start_ + seconds(61));
  EXPECT_EQ(clock_.look(blocks_.data(), start_ + seconds(120)), Clock::duration::zero());
}

TEST_F(GpuStallClockTest, SaysWhenSomeBlocksOfTheStuckKernelHaveNotStarted) {
  for (size_t b = 0; b < 3; ++b) {
    blocks_[b] = block(4, BlockActivity::kDone);
    blocks_[b].blocks = 3;
  }
  blocks_[0] = block(5, BlockActivity::kReceiving, 4);
  blocks_[0].blocks = 3;
  blocks_[1].kernel = 5;  // block 2 still shows kernel 4: it waits for a multiprocessor
  clock_.look(blocks_.data(), start_);
  EXPECT_EQ(clock_.look(blocks_.data(), start_ + seconds(60)), seconds(60));
  EXPECT_TRUE(clock_.partlyStarted());
  blocks_[2] = block(5, BlockActivity::kSending, 7);
  blocks_[2].blocks = 3;
  EXPECT_EQ(clock_.look(blocks_.data(), start_ + seconds(61)), Clock::duration::zero());
  EXPECT_EQ(clock_.look(blocks_.data(), start_ + seconds(63)), seconds(2));
  EXPECT_FALSE(clock_.partlyStarted());
  blocks_[0].blocks = 0;  // a record that does not say how many blocks its kernel has
  blocks_[2] = block(4, BlockActivity::kDone);
  clock_.look(blocks_.data(), start_ + seconds(64));
  EXPECT_FALSE(clock_.partlyStarted());
}

TEST_F(GpuStallClockTest, ResetForgetsTheLooksSoFar) {
  blocks_[0] = block(2, BlockActivity::kAtBarrier, 1);
  clock_.look(blocks_.data(), start_);
  EXPECT_EQ(clock_.look(blocks_.data(), start_ + seconds(2)), seconds(2));
  clock_.reset();  // no kernel in flight: a later kernel stuck at the same place starts a new count
  EXPECT_EQ(clock_.look(blocks_.data(), start_ + seconds(10)), Clock::duration::zero());
  EXPECT_EQ(clock_.look(blocks_.data(), start_ + seconds(11)), seconds(1));
}

// A watch over records that the test writes, standing for a kernel's blocks.
class GpuStallWatchTest : public ::testing::Test {
 protected:
  void start(double timeoutSeconds) {
    startedAt_ = Clock::now();
    watch_ = std::make_unique<GpuStallWatch>(
        timeoutSeconds, blocks_.data(),
        [this] {
          // The watch's thread, between two looks: a peer moving the wait on writes here (the
          // records are the test's memory, not the GPU's, so one thread touches them).
          if (moving_) ++blocks_[0].seen;
          return inFlight_.load();
        },
        [this](const Status& why) {
          std::lock_guard<std::mutex> lock(mutex_);
          stalls_.push_back(why);
          stalledAt_ = Clock::now();
        });
  }
  std::vector<Status> stalls() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stalls_;
  }
  // Waits up to `limit` for a stall report; true if one came.
  bool awaitStall(Clock::duration limit) {
    for (const auto deadline = Clock::now() + limit; Clock::now() < deadline;) {
      if (!stalls().empty()) return true;
      std::this_thread::sleep_for(milliseconds(10));
    }
    return !stalls().empty();
  }

  std::vector<GpuBlockProgress> blocks_ = std::vector<GpuBlockProgress>(kRecordedBlocks);
  std::atomic<bool> inFlight_{true};
  std::atomic<bool> moving_{false};
  std::mutex mutex_;
  std::vector<Status> stalls_;
  Clock::time_point stalledAt_;
  Clock::time_point startedAt_;
  std::unique_ptr<GpuStallWatch> watch_;
};

TEST_F(GpuStallWatchTest, ReportsAStuckKernelOnceAfterTheTimeoutSayingWhatItWaitsFor) {
  blocks_[0] = block(7, BlockActivity::kDone);
  blocks_[1] = block(7, BlockActivity::kReceiving, 4);
  start(1);
  ASSERT_TRUE(awaitStall(seconds(30)));
  std::this_thread::sleep_for(4 * GpuStallWatch::kLookPeriod);  // no second report
  const std::vector<Status> reported = stalls();
  ASSERT_EQ(reported.size(), 1u);
  EXPECT_EQ(reported[0].code(), StatusCode::kRemoteError);
  EXPECT_EQ(reported[0].message().rfind("its GPU kernel made no progress for ", 0), 0u) << reported[0].message();
  EXPECT_NE(reported[0].message().find(" s (WEFT_TIMEOUT=1): "), std::string::npos) << reported[0].message();
  EXPECT_NE(reported[0].message().find("GPU block 1 of kernel 7: lane 0 step 1/3 piece 0: waiting to receive from rank "
                                       "1 on channel 0 (posted 4, needs 5)"),
            std::string::npos)
      << reported[0].message();
  EXPECT_GE(stalledAt_ - startedAt_, seconds(1));
}

TEST_F(GpuStallWatchTest, GivesAKernelSomeOfWhoseBlocksHaveNotStartedTwiceTheTimeout) {
  blocks_[0] = block(7, BlockActivity::kReceiving, 4);
  blocks_[0].blocks = 2;
  blocks_[1] = block(6, BlockActivity::kDone);  // block 1 has not started kernel 7
  start(1);
  ASSERT_TRUE(awaitStall(seconds(30)));
  EXPECT_GE(stalledAt_ - startedAt_, seconds(2));
}

TEST_F(GpuStallWatchTest, SaysNothingWhileNoKernelIsInFlight) {
  blocks_[0] = block(7, BlockActivity::kReceiving, 4);  // a record left by a kernel that gave up uncleanly
  inFlight_ = false;
  start(0.2);
  EXPECT_FALSE(awaitStall(seconds(1)));
}

TEST_F(GpuStallWatchTest, SaysNothingWhileTheRecordsMove) {
  blocks_[0] = block(7, BlockActivity::kReceiving, 4);
  moving_ = true;  // a slow peer: each look finds the wait moved on
  start(1);
  EXPECT_FALSE(awaitStall(seconds(3)));
  moving_ = false;
  ASSERT_TRUE(awaitStall(seconds(30)));  // once the peer stops, the same wait is stuck
}

TEST_F(GpuStallWatchTest, StopsPromptly) {
  start(3600);
  const auto before = Clock::now();
  watch_.reset();
  EXPECT_LT(Clock::now() - before, seconds(5));
}

}  // namespace
}  // namespace weft::core
