// The kernel's walk of a run of lanes (src/device/run_walk.h) against a reference: the order in
// which the folded plan listed each window's pieces itself, before the kernel walked them (per
// window [jW, (j + 1)W), the first stream's rounds in it, then the second's), on random streams.

#include "src/device/run_walk.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace weft::device {
namespace {

// Rounds [from, to) of lane `lane`.
using Stretch = std::tuple<uint32_t, uint64_t, uint64_t>;

// The stretches of the run whose lanes have `rounds` (the first `firstLanes` one stream, the rest
// the other), as the walk gives them, leaving out empty ones.
std::vector<Stretch> walk(const std::vector<uint64_t>& rounds, uint32_t firstLanes, uint64_t window) {
  KernelRun run;
  run.firstLane = 0;
  run.streamLanes[0] = firstLanes;
  run.streamLanes[1] = static_cast<uint32_t>(rounds.size()) - firstLanes;
  run.window = window;
  std::vector<Stretch> stretches;
  RunWalk walker(run);
  while (walker.more()) {
    const uint32_t lane = walker.lane();
    uint64_t from = 0, to = 0;
    walker.take(rounds.at(lane), &from, &to);
    if (from < to) stretches.emplace_back(lane, from, to);
    if (stretches.size() > 10000) break;  // a walk that never ends
  }
  return stretches;
}

// The reference: each window of each stream cut out of its lanes.
std::vector<Stretch> listed(const std::vector<uint64_t>& rounds, uint32_t firstLanes, uint64_t window) {
  const uint32_t lanes = static_cast<uint32_t>(rounds.size());
  const uint32_t begins[2] = {0, firstLanes};
  const uint32_t ends[2] = {firstLanes, lanes};
  uint64_t longest = 0;
  for (int s = 0; s < 2; ++s) {
    uint64_t total = 0;
    for (uint32_t l = begins[s]; l < ends[s]; ++l) total += rounds[l];
    longest = std::max(longest, total);
  }
  std::vector<Stretch> stretches;
  for (uint64_t from = 0; from < longest; from += window) {
    for (int s = 0; s < 2; ++s) {
      uint64_t laneStart = 0;
      for (uint32_t l = begins[s]; l < ends[s]; ++l) {
        const uint64_t begin = std::max(from, laneStart);
        const uint64_t end = std::min(from + window, laneStart + rounds[l]);
        if (begin < end) stretches.emplace_back(l, begin - laneStart, end - laneStart);
        laneStart += rounds[l];
      }
    }
  }
  return stretches;
}

std::string describe(const std::vector<uint64_t>& rounds, uint32_t firstLanes, uint64_t window) {
  std::string text = "window " + std::to_string(window) + ", lanes' rounds";
  for (size_t l = 0; l < rounds.size(); ++l) {
    text += (l == firstLanes ? " |" : "") + std::string(" ") + std::to_string(rounds[l]);
  }
  return text;
}

TEST(RunWalk, TakesTheWindowsInTheOrderThePlanListedThem) {
  std::mt19937 random(20261207);
  for (int trial = 0; trial < 5000; ++trial) {
    const uint32_t firstLanes = random() % 5;
    std::vector<uint64_t> rounds(firstLanes + random() % 5);
    for (uint64_t& r : rounds) r = random() % 4 == 0 ? 0 : random() % 13;
    const uint64_t window = 1 + random() % 9;
    ASSERT_EQ(walk(rounds, firstLanes, window), listed(rounds, firstLanes, window))
        << describe(rounds, firstLanes, window);
  }
}

TEST(RunWalk, AnUnboundedWindowRunsEachLaneWholeInOrder) {
  const std::vector<uint64_t> rounds = {3, 0, 5, 1};
  const std::vector<Stretch> expected = {{0, 0, 3}, {2, 0, 5}, {3, 0, 1}};
  EXPECT_EQ(walk(rounds, 4, KernelRun{}.window), expected);
  // A window of 0 counts as unbounded: a malformed run is never walked forever.
  EXPECT_EQ(walk(rounds, 4, 0), expected);
  EXPECT_EQ(walk({3, 2}, 1, 0), (std::vector<Stretch>{{0, 0, 3}, {1, 0, 2}}));
}

TEST(RunWalk, AnEmptyRunHasNoStretch) {
  KernelRun run;
  run.firstLane = 7;
  RunWalk walker(run);
  EXPECT_FALSE(walker.more());
}

}  // namespace
}  // namespace weft::device
