// Launch turns: a thread's launch ready to enqueue on a stream waits for its earlier launches
// there, except those that say they are setting up, and for any launch of the thread enqueueing
// there. Turns pass when a launch's turns are destroyed, awaited or not.

#include "src/core/stream_turns.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace weft::core {
namespace {

using namespace std::chrono_literals;

/// An operation on GPU buffers enqueued on `stream` (the turns only read where it goes).
Op deviceOpOn(uintptr_t stream) {
  Op op;
  op.onDevice = true;
  op.stream = reinterpret_cast<void*>(stream);
  return op;
}

/// The turns of a launch of one operation on each of `streams`, taken on the calling thread.
LaunchTurns launchOn(std::initializer_list<uintptr_t> streams) {
  std::vector<Op> ops;
  for (uintptr_t stream : streams) ops.push_back(deviceOpOn(stream));
  return LaunchTurns::take(ops);
}

/// A wait that fails after `seconds` without its turn.
WaitContext within(double seconds) {
  WaitContext context;
  context.timeoutSeconds = seconds;
  context.what = "a turn";
  return context;
}

/// Awaits `turns` on a thread of its own (as a background launch does), saying when it returned.
class AwaitOnAnotherThread {
 public:
  explicit AwaitOnAnotherThread(LaunchTurns& turns)
      : thread_([this, &turns] {
          status_ = turns.await(within(30));
          returned_ = true;
        }) {}
  ~AwaitOnAnotherThread() {
    if (thread_.joinable()) thread_.join();
  }
  /// Whether the await is still waiting after a while.
  bool stillWaiting() {
    std::this_thread::sleep_for(200ms);
    return !returned_;
  }
  Status join() {
    thread_.join();
    return status_;
  }

 private:
  std::atomic<bool> returned_{false};
  Status status_;
  std::thread thread_;
};

TEST(LaunchTurns, ALaunchWaitsForAnEarlierOneUntilItSaysItIsSettingUp) {
  LaunchTurns earlier = launchOn({0x10});
  LaunchTurns later = launchOn({0x10});
  AwaitOnAnotherThread waiting(later);
  EXPECT_TRUE(waiting.stillWaiting()) << "the later launch went ahead of one on its way to enqueue";
  earlier.settingUp();
  EXPECT_TRUE(waiting.join().isOk());
}

TEST(LaunchTurns, ALaunchWaitsForAnEarlierOneEnqueueingOnItsStream) {
  std::optional<LaunchTurns> earlier = launchOn({0x10});
  LaunchTurns later = launchOn({0x10});
  ASSERT_TRUE(earlier->await(within(5)).isOk());
  AwaitOnAnotherThread waiting(later);
  EXPECT_TRUE(waiting.stillWaiting()) << "the later launch went ahead of one enqueueing";
  earlier.reset();
  EXPECT_TRUE(waiting.join().isOk());
}

TEST(LaunchTurns, ALaunchWaitsForAnEarlierOneAwaitingItsTurnToo) {
  std::optional<LaunchTurns> first = launchOn({0x10});
  std::optional<LaunchTurns> second = launchOn({0x10});
  std::optional<LaunchTurns> third = launchOn({0x10});
  ASSERT_TRUE(first->await(within(5)).isOk());
  AwaitOnAnotherThread secondWaits(*second);
  ASSERT_TRUE(secondWaits.stillWaiting());
  // The second awaits its turn: the third waits behind it, not only behind the first.
  AwaitOnAnotherThread thirdWaits(*third);
  ASSERT_TRUE(thirdWaits.stillWaiting());
  first.reset();
  EXPECT_TRUE(secondWaits.join().isOk());
  EXPECT_TRUE(thirdWaits.stillWaiting()) << "the third went ahead of the second, ready before it";
  second.reset();
  EXPECT_TRUE(thirdWaits.join().isOk());
}

TEST(LaunchTurns, ALaunchSettingUpIsOvertakenThenWaitsForTheOneEnqueueing) {
  LaunchTurns settingUp = launchOn({0x10});
  std::optional<LaunchTurns> later = launchOn({0x10});
  // Its peers may be driven by this thread's later calls: nothing waits for it.
  settingUp.settingUp();
  ASSERT_TRUE(later->await(within(5)).isOk());
  AwaitOnAnotherThread waiting(settingUp);
  EXPECT_TRUE(waiting.stillWaiting()) << "two launches of one thread enqueued on one stream at once";
  later.reset();
  EXPECT_TRUE(waiting.join().isOk());
}

TEST(LaunchTurns, ALaunchDoneSettingUpWaitsLikeAnyOther) {
  std::optional<LaunchTurns> settingUp = launchOn({0x10});
  std::optional<LaunchTurns> later = launchOn({0x10});
  settingUp->settingUp();
  // Once set up it awaits its turn and has it: the later launch has not asked for one yet.
  AwaitOnAnotherThread setUp(*settingUp);
  ASSERT_TRUE(setUp.join().isOk());
  settingUp->settingUp();  // too late: it is enqueueing
  AwaitOnAnotherThread waiting(*later);
  EXPECT_TRUE(waiting.stillWaiting()) << "a launch went ahead of one enqueueing";
  settingUp.reset();
  EXPECT_TRUE(waiting.join().isOk());
}

TEST(LaunchTurns, OtherStreamsAndOtherThreadsHaveLinesOfTheirOwn) {
  LaunchTurns held = launchOn({0x10});
  ASSERT_TRUE(held.await(within(5)).isOk());
  LaunchTurns otherStream = launchOn({0x20});
  EXPECT_TRUE(otherStream.await(within(5)).isOk());
  Status otherThread;
  std::thread([&otherThread] { otherThread = launchOn({0x10}).await(within(5)); }).join();
  EXPECT_TRUE(otherThread.isOk()) << otherThread.message();
}

TEST(LaunchTurns, ALaunchOnTwoStreamsWaitsOnEachAndHoldsUpEach) {
  std::optional<LaunchTurns> onA = launchOn({0x10});
  std::optional<LaunchTurns> onBoth = launchOn({0x10, 0x20});
  LaunchTurns onB = launchOn({0x20});
  ASSERT_EQ(onBoth->size(), 2u);
  ASSERT_TRUE(onA->await(within(5)).isOk());
  AwaitOnAnotherThread bothWait(*onBoth);
  ASSERT_TRUE(bothWait.stillWaiting()) << "it went ahead on stream A";
  AwaitOnAnotherThread bWaits(onB);
  EXPECT_TRUE(bWaits.stillWaiting()) << "it went ahead, on stream B, of a launch ready before it";
  onA.reset();
  EXPECT_TRUE(bothWait.join().isOk());
  EXPECT_TRUE(bWaits.stillWaiting()) << "it enqueued on stream B beside the launch of both";
  onBoth.reset();
  EXPECT_TRUE(bWaits.join().isOk());
}

TEST(LaunchTurns, LaunchesThatFailedHoldUpNoLaterOne) {
  std::optional<LaunchTurns> first = launchOn({0x10});
  std::optional<LaunchTurns> second = launchOn({0x10});
  std::optional<LaunchTurns> third = launchOn({0x10});
  LaunchTurns fourth = launchOn({0x10});
  first->settingUp();
  ASSERT_TRUE(second->await(within(5)).isOk());  // enqueueing, then failing
  AwaitOnAnotherThread thirdWaits(*third);
  ASSERT_TRUE(thirdWaits.stillWaiting());
  second.reset();
  EXPECT_TRUE(thirdWaits.join().isOk());
  third.reset();
  first.reset();  // failed while setting up
  EXPECT_TRUE(fourth.await(within(5)).isOk());
}

TEST(LaunchTurns, TheTurnsGoWithAMove) {
  std::optional<LaunchTurns> first = launchOn({0x10});
  std::optional<LaunchTurns> moved = std::move(*first);
  first.reset();  // moved from: passes nothing
  ASSERT_TRUE(moved->await(within(5)).isOk());
  LaunchTurns assigned = launchOn({0x20});
  assigned = std::move(*moved);  // passes its own turn on 0x20, takes the one on 0x10
  LaunchTurns next = launchOn({0x10});
  AwaitOnAnotherThread waiting(next);
  EXPECT_TRUE(waiting.stillWaiting()) << "the turn on 0x10 was passed by a move";
  EXPECT_TRUE(launchOn({0x20}).await(within(5)).isOk()) << "the turn on 0x20 was not passed";
  assigned.pass();
  EXPECT_TRUE(assigned.empty());
  EXPECT_TRUE(waiting.join().isOk());
}

TEST(LaunchTurns, AWaitEndsWhenItsContextSaysSo) {
  LaunchTurns enqueueing = launchOn({0x10});
  ASSERT_TRUE(enqueueing.await(within(5)).isOk());
  LaunchTurns waiting = launchOn({0x10});
  WaitContext aborted;
  aborted.check = [] { return invalidUsage("the communicator was aborted"); };
  EXPECT_EQ(waiting.await(aborted).code(), StatusCode::kInvalidUsage);
  const Status late = waiting.await(within(0.2));
  EXPECT_EQ(late.code(), StatusCode::kRemoteError);
  EXPECT_NE(late.message().find("a turn"), std::string::npos) << late.message();
}

TEST(LaunchTurns, OnlyOperationsOnGpuBuffersTakeTurnsOnePerStream) {
  Op onHost;
  Op onLegacy = deviceOpOn(0);
  Op onLegacyByName = deviceOpOn(1);  // cudaStreamLegacy: the stream a null handle names
  const std::vector<Op> ops = {onHost, deviceOpOn(0x10), deviceOpOn(0x10), onLegacy, onLegacyByName};
  LaunchTurns mixed = LaunchTurns::take(ops);
  EXPECT_EQ(mixed.size(), 2u);
  EXPECT_TRUE(LaunchTurns::take(std::span(&onHost, 1)).empty());
  EXPECT_TRUE(mixed.await(within(5)).isOk());
}

}  // namespace
}  // namespace weft::core
