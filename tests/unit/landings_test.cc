// The pieces the host executor announces to a receiving end that takes landings (ib): their order,
// and which of them may be written straight into a registered buffer.

#include "src/exec/landings.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "algorithms/schedule.h"

namespace weft::exec {
namespace {

using algorithms::Collective;
using algorithms::Lane;
using algorithms::Program;
using algorithms::Step;
using transport::Landing;

constexpr int kRanks = 4;
constexpr int kRank = 1;
constexpr int kPrevious = 0;  // on the ring 0, 1, 2, 3
constexpr size_t kSlotElements = 300;

struct RingCall {
  std::vector<int32_t> send;
  std::vector<int32_t> recv;
  core::Op op;
  Program program;
};

RingCall ringProgram(Collective collective, size_t count) {
  RingCall setup;
  const size_t recvCount = collective == Collective::kAllGather ? count * kRanks : count;
  setup.send.resize(count);
  setup.recv.resize(recvCount);
  setup.op.collective = collective;
  setup.op.sendbuff = setup.send.data();
  setup.op.recvbuff = setup.recv.data();
  setup.op.count = count;
  setup.op.type = algorithms::DataType::kInt32;
  const std::vector<algorithms::Ring> rings = {{0, 1, 2, 3}};
  algorithms::buildRingProgram({collective, count, 0, kRanks, kRank}, rings, &setup.program);
  return setup;
}

// The landings of the whole lane, phase by phase; steps for which `mustWait` is true never land
// directly.
std::vector<Landing> laneLandings(const RingCall& setup, const Lane& lane, const transport::RegistrationTable& table,
                                  const std::function<bool(size_t)>& mustWait = [](size_t) { return false; }) {
  std::vector<Landing> all, phase;
  for (size_t begin = 0; begin < lane.steps.size(); begin = algorithms::phaseEnd(lane.steps, begin)) {
    phaseLandings(setup.op, lane, begin, algorithms::phaseEnd(lane.steps, begin), kSlotElements, kPrevious, table,
                  mustWait, &phase);
    all.insert(all.end(), phase.begin(), phase.end());
  }
  return all;
}

// Where each piece received from kPrevious lands in the user's output, in the executor's order
// (piece k of every step of a phase, then piece k + 1), written out independently of landings.cc;
// nullptr for pieces that a step reduces.
std::vector<char*> expectedOutputs(const RingCall& setup, const Lane& lane) {
  std::vector<char*> outputs;
  for (size_t begin = 0; begin < lane.steps.size(); begin = algorithms::phaseEnd(lane.steps, begin)) {
    const size_t end = algorithms::phaseEnd(lane.steps, begin);
    for (size_t piece = 0;; ++piece) {
      bool any = false;
      for (size_t s = begin; s < end; ++s) {
        const Step& step = lane.steps[s];
        if (step.recvPeer != kPrevious || piece * kSlotElements >= step.count) continue;
        any = true;
        char* base = reinterpret_cast<char*>(const_cast<int32_t*>(setup.recv.data()));
        outputs.push_back(step.contribute ? nullptr
                                          : base + (step.dst.offset + piece * kSlotElements) * sizeof(int32_t));
      }
      if (!any) break;
    }
  }
  return outputs;
}

TEST(Landings, RingAllGatherIntoARegisteredBufferLandsEveryPieceWhereItBelongs) {
  RingCall setup = ringProgram(Collective::kAllGather, 1000);
  transport::RegistrationTable table;
  transport::RegisteredMemory* memory = table.add(setup.recv.data(), setup.recv.size() * sizeof(int32_t));
  ASSERT_EQ(setup.program.lanes.size(), 1u);
  const Lane& lane = setup.program.lanes[0];
  const std::vector<Landing> landings = laneLandings(setup, lane, table);
  const std::vector<char*> expected = expectedOutputs(setup, lane);
  // Three chunks of 1000 elements from the previous rank, in pieces of 300, 300, 300 and 100.
  ASSERT_EQ(landings.size(), 12u);
  ASSERT_EQ(expected.size(), landings.size());
  size_t bytes = 0;
  for (size_t i = 0; i < landings.size(); ++i) {
    EXPECT_EQ(landings[i].dst, expected[i]) << "piece " << i;
    EXPECT_EQ(landings[i].memory, memory) << "piece " << i;
    bytes += landings[i].bytes;
  }
  EXPECT_EQ(bytes, 3 * 1000 * sizeof(int32_t));
  EXPECT_EQ(landings[3].bytes, 300 * sizeof(int32_t));
  EXPECT_EQ(landings[11].bytes, 100 * sizeof(int32_t)) << "the last round holds the chunks' 100-element tails";
}

TEST(Landings, UnregisteredBuffersTakeSlotsForEveryPiece) {
  RingCall setup = ringProgram(Collective::kAllGather, 1000);
  transport::RegistrationTable table;
  // Registered, but not the output: the send buffer only.
  table.add(setup.send.data(), setup.send.size() * sizeof(int32_t));
  const std::vector<Landing> landings = laneLandings(setup, setup.program.lanes[0], table);
  ASSERT_EQ(landings.size(), 12u);
  for (const Landing& landing : landings) {
    EXPECT_EQ(landing.dst, nullptr);
    EXPECT_EQ(landing.memory, nullptr);
  }
}

TEST(Landings, RingAllReduceLandsItsAllGatherHalfAndReducesTheOtherInSlots) {
  RingCall setup = ringProgram(Collective::kAllReduce, 4000);
  transport::RegistrationTable table;
  table.add(setup.recv.data(), setup.recv.size() * sizeof(int32_t));
  const Lane& lane = setup.program.lanes[0];
  const std::vector<Landing> landings = laneLandings(setup, lane, table);
  const std::vector<char*> expected = expectedOutputs(setup, lane);
  ASSERT_EQ(landings.size(), expected.size());
  size_t direct = 0, slotted = 0;
  for (size_t i = 0; i < landings.size(); ++i) {
    EXPECT_EQ(landings[i].dst, expected[i]) << "piece " << i;
    (landings[i].dst != nullptr ? direct : slotted) += landings[i].bytes;
  }
  // 3 reduce-scatter and 3 all-gather steps of 1000 elements each.
  EXPECT_EQ(direct, 3 * 1000 * sizeof(int32_t));
  EXPECT_EQ(slotted, 3 * 1000 * sizeof(int32_t));
}

TEST(Landings, AStepThatMustWaitForAnotherLaneTakesSlots) {
  RingCall setup = ringProgram(Collective::kAllGather, 1000);
  transport::RegistrationTable table;
  table.add(setup.recv.data(), setup.recv.size() * sizeof(int32_t));
  const Lane& lane = setup.program.lanes[0];
  size_t waiting = lane.steps.size();
  for (size_t s = 0; s < lane.steps.size() && waiting == lane.steps.size(); ++s) {
    if (lane.steps[s].recvPeer == kPrevious) waiting = s;
  }
  ASSERT_LT(waiting, lane.steps.size());
  const std::vector<Landing> landings =
      laneLandings(setup, lane, table, [waiting](size_t step) { return step == waiting; });
  size_t slotted = 0;
  for (const Landing& landing : landings) {
    if (landing.dst == nullptr) slotted += landing.bytes;
  }
  EXPECT_EQ(slotted, lane.steps[waiting].count * sizeof(int32_t)) << "only the waiting step's pieces take slots";
}

TEST(Landings, AStepWhoseOutputRunsPastTheRegistrationTakesSlots) {
  RingCall setup = ringProgram(Collective::kAllGather, 1000);
  transport::RegistrationTable table;
  // Chunks 0 and 1 only: rank 1 receives chunks 0, 3 and 2 from rank 0.
  table.add(setup.recv.data(), 2000 * sizeof(int32_t));
  const std::vector<Landing> landings = laneLandings(setup, setup.program.lanes[0], table);
  const char* registeredEnd = reinterpret_cast<const char*>(setup.recv.data() + 2000);
  size_t direct = 0;
  for (const Landing& landing : landings) {
    if (landing.dst == nullptr) continue;
    EXPECT_LT(landing.dst, registeredEnd);
    direct += landing.bytes;
  }
  EXPECT_EQ(direct, 1000 * sizeof(int32_t)) << "only chunk 0 lies inside the registration";
}

}  // namespace
}  // namespace weft::exec
