#include "sim/program_timing.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cstdint>
#include <vector>

namespace weft::sim {
namespace {

constexpr int kMaxSlots = 8;

struct Connection {
  LinkTiming link;
  uint64_t posted = 0;    // pieces sent
  uint64_t consumed = 0;  // pieces the receiver has released
  double freeAt = 0;      // when the connection finished sending its last piece
  std::array<double, kMaxSlots> arrival{};  // arrival of piece i at [i % slots]
  std::array<double, kMaxSlots> release{};  // release of piece i at [i % slots]
  int receiverWaiting = -1;  // a lane waiting for a piece, or -1
  int senderWaiting = -1;    // a lane waiting for a slot, or -1
};

struct CompactStep {
  int32_t recv = -1;  // connection index
  int32_t send = -1;
  uint64_t bytes = 0;
  bool startsPhase = false;
};

struct LaneState {
  int rank = 0;
  size_t first = 0;  // index of its first step in the step table
  size_t count = 0;
  size_t phaseBegin = 0;  // the current phase's steps: [phaseBegin, phaseEnd)
  size_t phaseEnd = 0;
  uint64_t rounds = 0;    // of the current phase
  uint64_t round = 0;
  size_t step = 0;
  double clock = 0;
  bool finished = false;
  bool queued = false;
};

class Engine {
 public:
  Engine(int nranks, const TimingOptions& options) : options_(options), sendersOf_(nranks) {}

  // Room for `nranks` programs like `program` (the ranks of one schedule have about as many steps).
  void reserve(const algorithms::Program& program, int nranks) {
    size_t steps = 0;
    for (const algorithms::Lane& lane : program.lanes) steps += lane.steps.size();
    steps_.reserve(steps * static_cast<size_t>(nranks) * 9 / 8 + 16);
    lanes_.reserve(program.lanes.size() * static_cast<size_t>(nranks) + 16);
  }

  void load(int rank, const algorithms::Program& program, const LinkSource& linkOf) {
    for (const algorithms::Lane& lane : program.lanes) {
      LaneState state;
      state.rank = rank;
      state.first = steps_.size();
      for (const algorithms::Step& step : lane.steps) {
        CompactStep compact;
        compact.bytes = step.count * options_.elementSize;
        compact.startsPhase = step.startsPhase;
        if (step.recvPeer >= 0) compact.recv = connection(lane.channel, step.recvPeer, rank, linkOf);
        if (step.sendPeer >= 0) compact.send = connection(lane.channel, rank, step.sendPeer, linkOf);
        steps_.push_back(compact);
      }
      state.count = steps_.size() - state.first;
      enterPhase(state, 0);
      lanes_.push_back(state);
    }
  }

  TimingResult run() {
    TimingResult result;
    for (size_t i = 0; i < lanes_.size(); ++i) wake(static_cast<int>(i));
    while (!ready_.empty()) {
      const int lane = ready_.back();
      ready_.pop_back();
      lanes_[lane].queued = false;
      advance(lane);
    }
    for (const LaneState& lane : lanes_) {
      if (!lane.finished) {
        result.error = "rank " + std::to_string(lane.rank) + " never finished its step " + std::to_string(lane.step) +
                       " of round " + std::to_string(lane.round) + ": the programs deadlock or do not match";
        return result;
      }
      result.microseconds = std::max(result.microseconds, lane.clock);
    }
    for (const Connection& connection : connections_) result.pieces += static_cast<long>(connection.posted);
    return result;
  }

 private:
  int connection(int channel, int from, int to, const LinkSource& linkOf) {
    std::vector<SenderEnd>& ends = sendersOf_[from];
    for (const SenderEnd& end : ends) {
      if (end.channel == channel && end.to == to) return end.index;
    }
    Connection added;
    added.link = linkOf(channel, from, to);
    connections_.push_back(added);
    ends.push_back({channel, to, static_cast<int>(connections_.size() - 1)});
    return ends.back().index;
  }

  // Starts the phase of `lane` that begins at its step `begin`: its steps run in rounds of their own.
  void enterPhase(LaneState& lane, size_t begin) {
    lane.phaseBegin = begin;
    lane.phaseEnd = std::min(begin + 1, lane.count);
    while (lane.phaseEnd < lane.count && !steps_[lane.first + lane.phaseEnd].startsPhase) ++lane.phaseEnd;
    lane.rounds = 0;
    for (size_t i = begin; i < lane.phaseEnd; ++i) {
      const uint64_t bytes = steps_[lane.first + i].bytes;
      lane.rounds = std::max<uint64_t>(lane.rounds, (bytes + options_.pieceBytes - 1) / options_.pieceBytes);
    }
    lane.round = 0;
    lane.step = begin;
  }

  void wake(int lane) {
    if (lane < 0 || lanes_[lane].queued || lanes_[lane].finished) return;
    lanes_[lane].queued = true;
    ready_.push_back(lane);
  }

  // Each end of a connection belongs to one lane of the operation (true of every schedule).
  void waitOn(int* waiter, int lane) {
    assert(*waiter == -1 || *waiter == lane);
    *waiter = lane;
  }

  void advance(int laneIndex) {
    LaneState& lane = lanes_[laneIndex];
    const uint64_t slots = static_cast<uint64_t>(options_.slots);
    for (;;) {
      if (lane.round == lane.rounds) {  // the phase is done
        if (lane.phaseEnd == lane.count) break;
        enterPhase(lane, lane.phaseEnd);
        continue;
      }
      if (lane.step == lane.phaseEnd) {
        lane.step = lane.phaseBegin;
        ++lane.round;
        continue;
      }
      const CompactStep& step = steps_[lane.first + lane.step];
      const uint64_t begin = lane.round * options_.pieceBytes;
      if (begin >= step.bytes) {
        ++lane.step;
        continue;
      }
      const double bytes = static_cast<double>(std::min<uint64_t>(step.bytes - begin, options_.pieceBytes));
      double start = lane.clock;
      Connection* in = nullptr;
      if (step.recv >= 0) {
        in = &connections_[step.recv];
        if (in->consumed == in->posted) return waitOn(&in->receiverWaiting, laneIndex);
        start = std::max(start, in->arrival[in->consumed % slots]);
      }
      double end = start;
      if (step.send >= 0) {
        Connection& out = connections_[step.send];
        if (out.posted >= slots) {
          if (out.consumed + slots <= out.posted) return waitOn(&out.senderWaiting, laneIndex);
          start = std::max(start, out.release[(out.posted - slots) % slots]);
        }
        start = std::max(start, out.freeAt);
        end = start + bytes / out.link.bytesPerMicrosecond;
        const double latency = lane.round == 0 ? out.link.stepLatencyMicroseconds : out.link.pieceLatencyMicroseconds;
        out.arrival[out.posted % slots] = end + latency;
        out.freeAt = end;
        ++out.posted;
        wake(out.receiverWaiting);
        out.receiverWaiting = -1;
      } else {
        end = start + bytes / options_.localBytesPerMicrosecond;
      }
      if (in != nullptr) {
        in->release[in->consumed % slots] = end;
        ++in->consumed;
        wake(in->senderWaiting);
        in->senderWaiting = -1;
      }
      lane.clock = end;
      ++lane.step;
    }
    lane.finished = true;
  }

  struct SenderEnd {
    int channel;
    int to;
    int index;
  };

  TimingOptions options_;
  std::vector<std::vector<SenderEnd>> sendersOf_;
  std::vector<Connection> connections_;
  std::vector<CompactStep> steps_;
  std::vector<LaneState> lanes_;
  std::vector<int> ready_;
};

}  // namespace

TimingResult timePrograms(int nranks, const ProgramSource& programOf, const LinkSource& linkOf,
                          const TimingOptions& options) {
  assert(options.slots >= 1 && options.slots <= kMaxSlots && options.pieceBytes > 0);
  Engine engine(nranks, options);
  algorithms::Program program;
  for (int rank = 0; rank < nranks; ++rank) {
    programOf(rank, &program);
    if (rank == 0) engine.reserve(program, nranks);
    engine.load(rank, program, linkOf);
  }
  return engine.run();
}

}  // namespace weft::sim
