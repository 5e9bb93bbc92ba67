// The simulator's timing of step programs (sim/program_timing.h) against what can be worked out by
// hand: one transfer, a ring step after step, a pipelined chain, a connection held back by its
// slots, a phase that waits for the pieces before it, and programs that cannot finish.

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "algorithms/schedule.h"
#include "sim/program_timing.h"

namespace weft::sim {
namespace {

using algorithms::Collective;
using algorithms::OpShape;
using algorithms::Program;
using algorithms::Ring;

constexpr double kBandwidth = 10000;  // bytes per us (10 GB/s)
constexpr double kLatency = 2;        // us

LinkSource uniformLinks() {
  return [](int, int, int) { return LinkTiming{kBandwidth, kLatency, kLatency}; };
}

ProgramSource ringPrograms(Collective collective, size_t count, int nranks, int root = 0) {
  return [=](int rank, Program* program) {
    Ring ring(nranks);
    std::iota(ring.begin(), ring.end(), 0);
    const std::vector<Ring> rings = {ring};
    algorithms::buildRingProgram(OpShape{collective, count, root, nranks, rank}, rings, program);
  };
}

TEST(SimProgramTiming, OneTransferTakesItsBytesOverTheBandwidthPlusTheLatency) {
  TimingOptions options;
  options.pieceBytes = 4096;
  // Broadcast from rank 0 to rank 1 of 1000 floats: one piece.
  const TimingResult result = timePrograms(2, ringPrograms(Collective::kBroadcast, 1000, 2), uniformLinks(), options);
  ASSERT_TRUE(result.ok()) << result.error;
  EXPECT_EQ(result.pieces, 1);
  EXPECT_NEAR(result.microseconds, 4000 / kBandwidth + kLatency, 0.01);
}

TEST(SimProgramTiming, RingAllReduceWaitsForEachStepInTurn) {
  // Every step is one piece: 2(n-1) hand-offs of one chunk each.
  for (int n : {2, 3, 8, 64}) {
    const size_t chunk = 100;  // floats per rank's chunk
    TimingOptions options;
    const TimingResult result =
        timePrograms(n, ringPrograms(Collective::kAllReduce, chunk * n, n), uniformLinks(), options);
    ASSERT_TRUE(result.ok()) << result.error;
    EXPECT_EQ(result.pieces, 2L * (n - 1) * n);
    EXPECT_NEAR(result.microseconds, 2 * (n - 1) * (chunk * 4 / kBandwidth + kLatency), 0.05) << n << " ranks";
  }
}

TEST(SimProgramTiming, APipelinedChainMovesOnePiecePerPieceTimeOnceFull) {
  // Broadcast of 64 pieces down a chain of 5 ranks (the ring from rank 0, whose last hop is unused),
  // without latency: the last rank has its last piece after (hops + pieces - 1) piece times.
  TimingOptions options;
  options.pieceBytes = 1000;
  options.localBytesPerMicrosecond = 1e12;  // the root's copy into its own output costs nothing
  const LinkSource noLatency = [](int, int, int) { return LinkTiming{kBandwidth, 0, 0}; };
  const TimingResult result = timePrograms(5, ringPrograms(Collective::kBroadcast, 64 * 250, 5), noLatency, options);
  ASSERT_TRUE(result.ok()) << result.error;
  EXPECT_NEAR(result.microseconds, (4 + 64 - 1) * (1000 / kBandwidth), 0.01);
}

TEST(SimProgramTiming, OneSlotMakesEachPieceWaitForTheLastOnesRelease) {
  TimingOptions options;
  options.pieceBytes = 1000;
  options.slots = 1;
  options.localBytesPerMicrosecond = 1e12;
  const TimingResult result = timePrograms(2, ringPrograms(Collective::kBroadcast, 10 * 250, 2), uniformLinks(), options);
  ASSERT_TRUE(result.ok()) << result.error;
  // Each piece: sent in 0.1 us, arrives 2 us later, is released at once; the next starts then.
  EXPECT_NEAR(result.microseconds, 10 * (1000 / kBandwidth + kLatency), 0.01);
  options.slots = 8;
  const TimingResult pipelined = timePrograms(2, ringPrograms(Collective::kBroadcast, 10 * 250, 2), uniformLinks(), options);
  EXPECT_LT(pipelined.microseconds, result.microseconds / 3);
}

TEST(SimProgramTiming, ProgramsThatWaitForEachOtherAreReported) {
  const ProgramSource bothReceiveFirst = [](int rank, Program* program) {
    program->lanes.clear();
    algorithms::Lane lane;
    algorithms::Step receive;
    receive.recvPeer = 1 - rank;
    receive.dst = {algorithms::BufferKind::kRecv, 0};
    receive.count = 10;
    algorithms::Step send;
    send.sendPeer = 1 - rank;
    send.src = {algorithms::BufferKind::kSend, 0};
    send.count = 10;
    lane.steps = {receive, send};
    program->lanes.push_back(lane);
  };
  const TimingResult result = timePrograms(2, bothReceiveFirst, uniformLinks(), TimingOptions{});
  EXPECT_FALSE(result.ok());
  EXPECT_NE(result.error.find("deadlock"), std::string::npos) << result.error;
}

TEST(SimProgramTiming, APhaseStartsOnceEveryPieceBeforeItHasRun) {
  // Rank 1 sends rank 0 two pieces; rank 0 then sends one piece back. Each second step starts a
  // phase, or not.
  const double piece = 4096 / kBandwidth;
  for (bool phases : {false, true}) {
    const ProgramSource programs = [phases](int rank, Program* program) {
      program->lanes.clear();
      algorithms::Step first;
      algorithms::Step second;
      first.count = 2048;  // two pieces of 4096 bytes
      second.count = 1024;
      second.startsPhase = phases;
      if (rank == 0) {
        first.recvPeer = 1;
        first.dst = {algorithms::BufferKind::kRecv, 0};
        second.sendPeer = 1;
        second.src = {algorithms::BufferKind::kRecv, 0};
      } else {
        first.sendPeer = 0;
        first.src = {algorithms::BufferKind::kSend, 0};
        second.recvPeer = 0;
        second.dst = {algorithms::BufferKind::kRecv, 0};
      }
      program->lanes.push_back({0, {first, second}});
    };
    TimingOptions options;
    options.pieceBytes = 4096;
    const TimingResult result = timePrograms(2, programs, uniformLinks(), options);
    ASSERT_TRUE(result.ok()) << result.error;
    // In rounds, rank 1 sends its second piece only once rank 0's reply to the first has arrived;
    // in phases, both pieces go first and the reply follows them.
    const double expected = phases ? 3 * piece + 2 * kLatency : 3 * piece + 3 * kLatency;
    EXPECT_NEAR(result.microseconds, expected, 0.05) << (phases ? "phases" : "rounds");  // and local copies
  }
}

}  // namespace
}  // namespace weft::sim
