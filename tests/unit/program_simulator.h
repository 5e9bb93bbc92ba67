#pragma once
// A simulator for step programs, for tests: it runs the programs of all ranks of one operation
// over in-memory connections, on symbolic data (tests/unit/symbolic_data.h), and reports the first
// thing an executor or a user would trip on. Memory the operation did not initialize reads as
// garbage.
//
// Connections are FIFO queues per (channel, src rank, dst rank) carrying pieces of at most
// slotElements; a bounded queue holds slotCount pieces. Each step is cut into pieces the way the
// executor cuts it; a lane runs its pieces step after step, or round after round (piece k of every
// step of a phase before piece k+1 of any, as a pipelining executor does; algorithms/step.h). Ranks and lanes interleave round
// robin, greedily or in a seeded random order.
//
// Lanes of one rank may not share memory where one of them writes, with one exception that data
// flow orders: a lane may overwrite an element that only another lane of its rank read, when the
// value it writes came from a peer and already holds this rank's own element from that place (the
// read happened first: what it read went into what came back). That is how a tree's way down
// writes the result over the input its way up sent, in place.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "algorithms/collective.h"
#include "algorithms/step.h"
#include "tests/unit/symbolic_data.h"

namespace weft::tests {

using algorithms::BufferKind;
using algorithms::BufferSlice;
using algorithms::Program;
using algorithms::Step;

/// One rank's part in the simulated operation. A rank may take part several times (a Send and a
/// Recv of one group); each part has its own buffers.
struct Participant {
  OpShape shape;
  Program program;
};

enum class Interleaving { kRoundRobin, kRandom, kGreedy };

struct SimulatorOptions {
  size_t slotElements = 64;
  size_t slotCount = 0;  // pieces a connection holds; 0: unbounded
  bool pieceMajor = false;
  Interleaving interleaving = Interleaving::kRoundRobin;
  uint64_t seed = 1;
  bool inPlace = false;
  int nChannels = 1;
};

enum class SimulationFailure {
  kNone,
  kInvalidProgram,  // a channel or peer out of range
  kInvalidStep,     // a step that reads nothing, writes nothing, or mixes a receive with a copy
  kZeroCountStep,
  kSharedConnection,  // two lanes of one program use one connection direction
  kOutOfRange,        // a slice beyond its buffer
  kCountMismatch,     // a receive whose piece or step differs from the matching send's
  kDeadlock,
  kLaneRace,      // two lanes touch one element and at least one writes it
  kLeftoverData,  // data sent and never received
  kWrongResult,
};

struct SimulationResult {
  SimulationFailure failure = SimulationFailure::kNone;
  std::string message;
  size_t pieces = 0;
  bool ok() const { return failure == SimulationFailure::kNone; }
};

/// Keeps its storage from one run to the next, so that many small runs cost few allocations.
class ProgramSimulator {
 public:
  /// Runs the participants' programs to completion or to the first failure.
  SimulationResult run(std::span<const Participant> participants, const SimulatorOptions& options) {
    participants_ = participants;
    options_ = options;
    result_ = {};
    lanes_.clear();
    usedQueues_.clear();
    ++run_;
    if (participants_.empty()) return result_;
    nranks_ = participants_[0].shape.nranks;
    if (!validate()) return result_;
    setUp();
    if (result_.ok()) execute();
    if (result_.ok()) checkQueuesDrained();
    if (result_.ok()) checkResults();
    return result_;
  }

 private:
  struct PieceHeader {
    size_t size = 0;
    size_t stepCount = 0;
    size_t stepIndex = 0;
  };
  // A FIFO without per-piece allocations.
  struct Queue {
    size_t key = 0;  // (channel * nranks + src) * nranks + dst
    uint64_t run = 0;
    std::vector<Symbol> data;
    size_t dataHead = 0;
    std::vector<PieceHeader> pieces;
    size_t pieceHead = 0;
    size_t size() const { return pieces.size() - pieceHead; }
    void pop(size_t elements) {
      dataHead += elements;
      if (++pieceHead == pieces.size()) {
        data.clear(), pieces.clear(), dataHead = pieceHead = 0;
      } else if (dataHead >= 4096 && dataHead * 2 >= data.size()) {
        data.erase(data.begin(), data.begin() + static_cast<std::ptrdiff_t>(dataHead));
        pieces.erase(pieces.begin(), pieces.begin() + static_cast<std::ptrdiff_t>(pieceHead));
        dataHead = pieceHead = 0;
      }
    }
  };
  struct LaneState {
    size_t participant = 0;
    size_t lane = 0;
    size_t step = 0;
    size_t piece = 0;
    bool done = false;
    size_t phaseBegin = 0;  // piece-major runs go round after round within steps [phaseBegin, phaseEnd)
    size_t phaseEnd = 0;
  };
  struct Access {
    int16_t writer = -1;  // lane id that wrote the element, -1 none
    int16_t reader = -1;  // lane id that read it, -1 none, -2 several
  };
  struct Memory {
    BufferLayout layout;
    std::vector<Symbol> values;
    std::vector<Access> access;
  };

  bool fail(SimulationFailure failure, std::string message) {
    if (result_.ok()) {
      result_.failure = failure;
      result_.message = std::move(message);
    }
    return false;
  }

  std::string where(const LaneState& state) const {
    const Participant& part = participants_[state.participant];
    return std::string(algorithms::collectiveName(part.shape.collective)) + " rank " + std::to_string(part.shape.rank) +
           " lane " + std::to_string(state.lane) + " (channel " +
           std::to_string(part.program.lanes[state.lane].channel) + ") step " + std::to_string(state.step) + " piece " +
           std::to_string(state.piece);
  }

  size_t pieceCount(size_t count) const { return (count + options_.slotElements - 1) / options_.slotElements; }

  static size_t bufferSize(BufferKind kind, const BufferLayout& layout) {
    return kind == BufferKind::kSend ? layout.sendSize : kind == BufferKind::kScratch ? layout.scratchSize : layout.recvSize;
  }
  static const char* bufferName(BufferKind kind) {
    return kind == BufferKind::kSend ? "send" : kind == BufferKind::kScratch ? "scratch" : "recv";
  }

  bool sliceInRange(const BufferSlice& slice, size_t count, const BufferLayout& layout) const {
    const size_t size = bufferSize(slice.buffer, layout);
    return slice.offset <= size && count <= size - slice.offset;
  }

  bool validate() {
    for (size_t p = 0; p < participants_.size(); ++p) {
      const Participant& part = participants_[p];
      const BufferLayout layout = bufferLayout(part.shape, options_.inPlace);
      std::vector<std::pair<uint64_t, size_t>> used;  // (connection direction, lane)
      for (size_t l = 0; l < part.program.lanes.size(); ++l) {
        const algorithms::Lane& lane = part.program.lanes[l];
        LaneState at{p, l, 0, 0, false};
        // Ring channels, then as many point-to-point channels (Send/Recv).
        if (lane.channel < 0 || lane.channel >= 2 * options_.nChannels) {
          return fail(SimulationFailure::kInvalidProgram, where(at) + ": channel out of range");
        }
        for (size_t s = 0; s < lane.steps.size(); ++s) {
          const Step& step = lane.steps[s];
          at.step = s;
          auto badPeer = [&](int peer) { return peer < -1 || peer >= nranks_; };
          if (badPeer(step.recvPeer) || badPeer(step.sendPeer)) {
            return fail(SimulationFailure::kInvalidProgram, where(at) + ": peer out of range");
          }
          if (step.count == 0) return fail(SimulationFailure::kZeroCountStep, where(at));
          const bool recv = step.recvPeer >= 0;
          if ((recv && step.src.present() && !step.contribute) || (step.contribute && !step.src.present()) ||
              (!recv && !step.src.present()) || (!step.dst.present() && step.sendPeer < 0) ||
              step.dst.buffer == BufferKind::kSend) {
            return fail(SimulationFailure::kInvalidStep, where(at));
          }
          for (const BufferSlice* slice : {&step.src, &step.dst}) {
            if (slice->present() && !sliceInRange(*slice, step.count, layout)) {
              return fail(SimulationFailure::kOutOfRange,
                          where(at) + ": offset " + std::to_string(slice->offset) + " count " +
                              std::to_string(step.count) + " in a " + bufferName(slice->buffer) + " buffer of " +
                              std::to_string(bufferSize(slice->buffer, layout)));
            }
          }
          for (int direction = 0; direction < 2; ++direction) {
            int peer = direction == 0 ? step.recvPeer : step.sendPeer;
            if (peer < 0) continue;
            uint64_t key = (static_cast<uint64_t>(lane.channel) * nranks_ + peer) * 2 + direction;
            auto found = std::find_if(used.begin(), used.end(), [&](auto& entry) { return entry.first == key; });
            if (found == used.end()) {
              used.emplace_back(key, l);
            } else if (found->second != l) {
              return fail(SimulationFailure::kSharedConnection,
                          where(at) + ": lane " + std::to_string(found->second) + " also " +
                              (direction == 0 ? "receives from " : "sends to ") + std::to_string(peer));
            }
          }
        }
      }
    }
    return true;
  }

  void setUp() {
    if (memories_.size() < participants_.size()) memories_.resize(participants_.size());
    for (size_t p = 0; p < participants_.size(); ++p) {
      const Participant& part = participants_[p];
      Memory& memory = memories_[p];
      memory.layout = bufferLayout(part.shape, options_.inPlace);
      memory.values.assign(memory.layout.memory, Symbol{0, 0, 0, 0, kFaultGarbage});
      memory.access.assign(memory.layout.memory, Access{});
      for (size_t i = 0; i < memory.layout.sendSize; ++i) {
        memory.values[memory.layout.sendBase + i] = initialSend(part.shape, i);
      }
      for (size_t l = 0; l < part.program.lanes.size(); ++l) {
        const std::vector<Step>& steps = part.program.lanes[l].steps;
        LaneState state{p, l, 0, 0, steps.empty()};
        state.phaseEnd = steps.empty() ? 0 : algorithms::phaseEnd(steps, 0);
        lanes_.push_back(state);
      }
    }
    if (lanes_.size() > 32000) fail(SimulationFailure::kInvalidProgram, "too many lanes to simulate");
  }

  Queue& queue(int channel, int src, int dst) {
    const size_t key = (static_cast<size_t>(channel) * nranks_ + src) * nranks_ + dst;
    Queue& queue = queues_[key];
    if (queue.run != run_) {
      queue.key = key;
      queue.run = run_;
      queue.data.clear(), queue.pieces.clear(), queue.dataHead = queue.pieceHead = 0;
      usedQueues_.push_back(&queue);
    }
    return queue;
  }

  size_t memoryIndex(const Memory& memory, const BufferSlice& slice, size_t offset) const {
    const BufferLayout& layout = memory.layout;
    const size_t base = slice.buffer == BufferKind::kSend      ? layout.sendBase
                        : slice.buffer == BufferKind::kScratch ? layout.scratchBase
                                                               : layout.recvBase;
    return base + slice.offset + offset;
  }

  void advance(LaneState& state) {
    const std::vector<Step>& steps = participants_[state.participant].program.lanes[state.lane].steps;
    if (!options_.pieceMajor) {
      if (++state.piece >= pieceCount(steps[state.step].count)) {
        state.piece = 0;
        state.done = ++state.step == steps.size();
      }
      return;
    }
    // Next step of this round that has a piece `state.piece`; else the first of the next round;
    // else the first step of the next phase.
    for (size_t s = state.step + 1; s < state.phaseEnd; ++s) {
      if (pieceCount(steps[s].count) > state.piece) {
        state.step = s;
        return;
      }
    }
    ++state.piece;
    for (size_t s = state.phaseBegin; s < state.phaseEnd; ++s) {
      if (pieceCount(steps[s].count) > state.piece) {
        state.step = s;
        return;
      }
    }
    if (state.phaseEnd == steps.size()) {
      state.done = true;
      return;
    }
    state.phaseBegin = state.step = state.phaseEnd;
    state.phaseEnd = algorithms::phaseEnd(steps, state.phaseBegin);
    state.piece = 0;
  }

  // `received`: the value written came from a peer (only for writes).
  bool touch(Memory& memory, size_t index, int16_t lane, bool write, const LaneState& state,
             const Symbol* received = nullptr) {
    int16_t& writer = memory.access[index].writer;
    int16_t& reader = memory.access[index].reader;
    bool readByOther = write && reader != -1 && reader != lane;
    if (readByOther && received != nullptr && index >= memory.layout.sendBase &&
        index < memory.layout.sendBase + memory.layout.sendSize) {
      const int rank = participants_[state.participant].shape.rank;
      const bool holdsOwnElement = (received->ranks & rankBit(rank)) != 0 &&
                                   received->element == index - memory.layout.sendBase;
      if (holdsOwnElement) readByOther = false;  // ordered by the data flow
    }
    bool race = (writer != -1 && writer != lane) || readByOther;
    if (race) {
      return fail(SimulationFailure::kLaneRace, where(state) + ": element " + std::to_string(index) +
                                                    " of this rank's memory is shared with lane id " +
                                                    std::to_string(writer != lane ? writer : reader));
    }
    if (write) {
      writer = lane;
    } else {
      reader = (reader == -1 || reader == lane) ? lane : -2;
    }
    return true;
  }

  // Runs one piece of the lane if its connections allow; false if it must wait (or failed).
  bool tryPiece(int laneId) {
    LaneState& state = lanes_[laneId];
    const Participant& part = participants_[state.participant];
    const algorithms::Lane& lane = part.program.lanes[state.lane];
    const Step& step = lane.steps[state.step];
    const int rank = part.shape.rank;
    const size_t offset = state.piece * options_.slotElements;
    const size_t size = std::min(options_.slotElements, step.count - offset);
    Queue* in = step.recvPeer >= 0 ? &queue(lane.channel, step.recvPeer, rank) : nullptr;
    Queue* out = step.sendPeer >= 0 ? &queue(lane.channel, rank, step.sendPeer) : nullptr;
    if (in != nullptr && in->size() == 0) return false;
    if (out != nullptr && options_.slotCount > 0 && out->size() >= options_.slotCount) return false;
    if (in != nullptr) {
      const PieceHeader& header = in->pieces[in->pieceHead];
      if (header.size != size || header.stepCount != step.count) {
        return fail(SimulationFailure::kCountMismatch,
                    where(state) + ": receives " + std::to_string(size) + " of a " + std::to_string(step.count) +
                        "-element step from rank " + std::to_string(step.recvPeer) + ", which sent " +
                        std::to_string(header.size) + " of a " + std::to_string(header.stepCount) +
                        "-element step (its step " + std::to_string(header.stepIndex) + ")");
      }
    }
    Memory& memory = memories_[state.participant];
    const bool localCopy =
        in == nullptr && out == nullptr && !step.contribute && step.src.present() && step.dst.present();
    // The executor skips a copy onto itself (in place).
    if (localCopy && memoryIndex(memory, step.src, 0) == memoryIndex(memory, step.dst, 0)) {
      ++result_.pieces;
      advance(state);
      return true;
    }
    for (size_t e = 0; e < size; ++e) {
      Symbol value;
      if (in != nullptr) value = in->data[in->dataHead + e];
      if (step.src.present()) {
        size_t index = memoryIndex(memory, step.src, offset + e);
        if (!touch(memory, index, static_cast<int16_t>(laneId), false, state)) return false;
        Symbol local = memory.values[index];
        if (step.contribute && !step.srcIsPartial) local = scaleSymbol(local);
        value = in != nullptr ? combineSymbols(value, local) : local;
      }
      if (step.finalize) ++value.finalizes;
      if (step.dst.present()) {
        size_t index = memoryIndex(memory, step.dst, offset + e);
        if (!touch(memory, index, static_cast<int16_t>(laneId), true, state, in != nullptr ? &value : nullptr)) {
          return false;
        }
        memory.values[index] = value;
      }
      if (out != nullptr) out->data.push_back(value);
    }
    if (out != nullptr) out->pieces.push_back({size, step.count, state.step});
    if (in != nullptr) in->pop(size);
    ++result_.pieces;
    advance(state);
    return true;
  }

  std::string describeBlocked() const {
    std::string text;
    int shown = 0;
    for (const LaneState& state : lanes_) {
      if (state.done) continue;
      if (shown++ == 6) return text + "; ...";
      const Participant& part = participants_[state.participant];
      const Step& step = part.program.lanes[state.lane].steps[state.step];
      text += (text.empty() ? "" : "; ") + where(state) + " (recv " + std::to_string(step.recvPeer) + ", send " +
              std::to_string(step.sendPeer) + ")";
    }
    return text;
  }

  void execute() {
    std::mt19937_64 random(options_.seed);
    std::vector<int> order(lanes_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    size_t unfinished = std::count_if(lanes_.begin(), lanes_.end(), [](auto& s) { return !s.done; });
    while (unfinished > 0) {
      bool progressed = false;
      if (options_.interleaving == Interleaving::kRandom) std::shuffle(order.begin(), order.end(), random);
      for (int laneId : order) {
        if (lanes_[laneId].done) continue;
        size_t budget = 1;
        if (options_.interleaving == Interleaving::kGreedy) budget = SIZE_MAX;
        if (options_.interleaving == Interleaving::kRandom) budget = 1 + random() % 4;
        while (budget-- > 0 && !lanes_[laneId].done && tryPiece(laneId)) progressed = true;
        if (!result_.ok()) return;
        if (lanes_[laneId].done) --unfinished;
      }
      if (!progressed && unfinished > 0) {
        fail(SimulationFailure::kDeadlock, describeBlocked());
        return;
      }
    }
  }

  void checkQueuesDrained() {
    for (const Queue* queue : usedQueues_) {
      if (queue->size() == 0) continue;
      const size_t key = queue->key;
      fail(SimulationFailure::kLeftoverData,
           std::to_string(queue->size()) + " pieces left on channel " + std::to_string(key / nranks_ / nranks_) +
               " from rank " + std::to_string(key / nranks_ % nranks_) + " to rank " + std::to_string(key % nranks_));
      return;
    }
  }

  void checkResults() {
    for (size_t p = 0; p < participants_.size(); ++p) {
      const OpShape& shape = participants_[p].shape;
      const Memory& memory = memories_[p];
      const BufferLayout& layout = memory.layout;
      const std::string who =
          std::string(algorithms::collectiveName(shape.collective)) + " rank " + std::to_string(shape.rank);
      for (size_t i = 0; i < layout.recvSize; ++i) {
        const Symbol& actual = memory.values[layout.recvBase + i];
        Symbol expected = expectedRecv(shape, i);
        if (!(actual == expected)) {
          fail(SimulationFailure::kWrongResult,
               who + " recv[" + std::to_string(i) + "] = " + describe(actual) + ", expected " + describe(expected));
          return;
        }
      }
      for (size_t i = 0; i < layout.sendSize; ++i) {
        size_t index = layout.sendBase + i;
        bool inRecv = index >= layout.recvBase && index < layout.recvBase + layout.recvSize;
        if (!inRecv && !(memory.values[index] == initialSend(shape, i))) {
          fail(SimulationFailure::kWrongResult, who + " send[" + std::to_string(i) + "] changed");
          return;
        }
      }
    }
  }

  std::span<const Participant> participants_;
  SimulatorOptions options_;
  int nranks_ = 0;
  std::vector<Memory> memories_;
  std::vector<LaneState> lanes_;
  std::unordered_map<size_t, Queue> queues_;  // elements stay in place as the map grows
  std::vector<Queue*> usedQueues_;            // by this run, in order of first use
  uint64_t run_ = 0;
  SimulationResult result_;
};

inline SimulationResult simulate(std::span<const Participant> participants, const SimulatorOptions& options) {
  return ProgramSimulator().run(participants, options);
}

}  // namespace weft::tests
