#pragma once
// Helpers shared by the schedule tests: rings, every rank's program for one operation, a text form
// of programs, and a simulated run.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "algorithms/schedule.h"
#include "tests/unit/program_simulator.h"

namespace weft::tests {

using algorithms::BufferKind;
using algorithms::BufferSlice;
using algorithms::buildRingProgram;
using algorithms::collectiveName;
using algorithms::Lane;
using algorithms::Ring;

inline constexpr Collective kAllCollectives[] = {
    Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter, Collective::kBroadcast,
    Collective::kReduce,    Collective::kAllToAll,  Collective::kGather,        Collective::kScatter,
    Collective::kSend,      Collective::kRecv,
};

inline bool isRooted(Collective collective) {
  return collective == Collective::kBroadcast || collective == Collective::kReduce ||
         collective == Collective::kGather || collective == Collective::kScatter;
}

// Channel 0 in rank order, channel 1 reversed, channel 2 shuffled: a schedule that confuses ranks
// with ring positions fails on the last two.
inline std::vector<Ring> testRings(int nranks, int nChannels) {
  std::vector<Ring> rings;
  std::mt19937 random(static_cast<uint32_t>(nranks));
  for (int channel = 0; channel < nChannels; ++channel) {
    Ring ring(nranks);
    std::iota(ring.begin(), ring.end(), 0);
    if (channel % 3 == 1) std::reverse(ring.begin(), ring.end());
    if (channel % 3 == 2) {
      for (int i = nranks - 1; i > 0; --i) std::swap(ring[i], ring[random() % (i + 1)]);
    }
    rings.push_back(ring);
  }
  return rings;
}

inline Program build(Collective collective, size_t count, int root, int nranks, int rank,
                     const std::vector<Ring>& rings, size_t granule = 1) {
  Program program;
  buildRingProgram({collective, count, root, nranks, rank, granule}, rings, &program);
  return program;
}

// Every rank's part in one operation. Send runs with Recv as a ring shift: every rank sends to the
// rank `root` places after it and receives from the one `root` places before it. The data is cut
// in units of `granule` elements.
inline std::vector<Participant> participantsFor(Collective collective, int nranks, int root, size_t count,
                                                const std::vector<Ring>& rings, size_t granule = 1) {
  std::vector<Participant> parts;
  for (int rank = 0; rank < nranks; ++rank) {
    if (collective == Collective::kSend) {
      int to = (rank + root) % nranks;
      int from = (rank - root + nranks) % nranks;
      parts.push_back({{Collective::kSend, count, to, nranks, rank, granule},
                       build(Collective::kSend, count, to, nranks, rank, rings, granule)});
      parts.push_back({{Collective::kRecv, count, from, nranks, rank, granule},
                       build(Collective::kRecv, count, from, nranks, rank, rings, granule)});
      continue;
    }
    OpShape shape{collective, count, root, nranks, rank, granule};
    parts.push_back({shape, build(collective, count, root, nranks, rank, rings, granule)});
  }
  return parts;
}

inline SimulationResult simulateOp(ProgramSimulator& simulator, Collective collective, int nranks, int root,
                                   size_t count, int nChannels, SimulatorOptions options, size_t granule = 1) {
  std::vector<Ring> rings = testRings(nranks, nChannels);
  options.nChannels = nChannels;
  return simulator.run(participantsFor(collective, nranks, root, count, rings, granule), options);
}

/// Options for a pipelined simulated run as an executor makes it: pieces of 1, 7 or 64 elements,
/// two per connection, round after round, in an interleaving and with a seed drawn from `draw`.
inline SimulatorOptions drawnPipelinedOptions(std::mt19937& draw, bool inPlace, int nChannels) {
  constexpr Interleaving kInterleavings[] = {Interleaving::kRoundRobin, Interleaving::kRandom, Interleaving::kGreedy};
  constexpr size_t kSlotElements[] = {1, 7, 64};
  SimulatorOptions options;
  options.slotElements = kSlotElements[draw() % 3];
  options.slotCount = 2;
  options.pieceMajor = true;
  options.inPlace = inPlace;
  options.interleaving = kInterleavings[draw() % 3];
  options.seed = draw();
  options.nChannels = nChannels;
  return options;
}

// Simulates every rank's program of `collective` (from build(nranks, rank, count)) at every rank
// count up to 64 and a few counts, in and out of place, with drawn pipelined options; the run
// must be exact and deadlock-free. Stops after five failures.
template <typename Build>
void expectExactAtEveryRankCountUpTo64(Collective collective, Build build, uint32_t seed) {
  std::mt19937 draw(seed);
  ProgramSimulator simulator;
  int failures = 0;
  for (int nranks = 1; nranks <= 64; ++nranks) {
    for (size_t count : {size_t{1}, size_t{3}, size_t{100}}) {
      for (bool inPlace : {false, true}) {
        const SimulatorOptions options = drawnPipelinedOptions(draw, inPlace, 1);
        std::vector<Participant> parts;
        for (int rank = 0; rank < nranks; ++rank) {
          parts.push_back({{collective, count, 0, nranks, rank}, build(nranks, rank, count)});
        }
        const SimulationResult result = simulator.run(parts, options);
        if (result.ok()) continue;
        ADD_FAILURE() << collectiveName(collective) << " nranks " << nranks << " count " << count << " slot "
                      << options.slotElements << (inPlace ? " in place" : "") << ": " << result.message;
        if (++failures == 5) return;
      }
    }
  }
}

inline std::string describeSlice(const BufferSlice& slice) {
  const char* name = slice.buffer == BufferKind::kSend ? "s@" : slice.buffer == BufferKind::kScratch ? "x@" : "r@";
  return name + std::to_string(slice.offset);
}

// A compact text form: "<P" receive from P, "s@O"/"r@O" source (a "+" when it contributes), "!"
// finalize, "=>r@O" destination, ">P" send to P, "#N" count; lanes on lines "cC: step | step",
// with "||" before a step that starts a phase.
inline std::string describe(const Program& program) {
  std::string text;
  for (const Lane& lane : program.lanes) {
    text += "c" + std::to_string(lane.channel) + ":";
    for (size_t i = 0; i < lane.steps.size(); ++i) {
      const Step& step = lane.steps[i];
      text += i == 0 ? " " : step.startsPhase ? " || " : " | ";
      if (step.recvPeer >= 0) text += "<" + std::to_string(step.recvPeer) + " ";
      if (step.src.present()) text += describeSlice(step.src) + (step.contribute ? "+ " : " ");
      if (step.finalize) text += "! ";
      if (step.dst.present()) text += "=>" + describeSlice(step.dst) + " ";
      if (step.sendPeer >= 0) text += ">" + std::to_string(step.sendPeer) + " ";
      text += "#" + std::to_string(step.count);
    }
    text += "\n";
  }
  return text;
}

}  // namespace weft::tests
