#include "src/exec/host_executor.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>

#include "algorithms/node_tree.h"
#include "algorithms/reduce.h"
#include "algorithms/schedule.h"
#include "algorithms/tuner.h"
#include "src/base/log.h"
#include "src/base/wait.h"
#include "src/core/communicator.h"
#include "src/core/op_tuning.h"
#include "src/core/progress_record.h"
#include "src/exec/direct_collectives.h"
#include "src/exec/landings.h"
#include "src/exec/program_connections.h"

namespace weft::exec {

using algorithms::BufferKind;
using algorithms::Collective;
using algorithms::Lane;
using algorithms::Step;

struct HostExecutor::LaneState {
  const core::Op* op = nullptr;
  const Lane* lane = nullptr;
  size_t elementSize = 0;
  transport::SlotKind slotKind = transport::SlotKind::kSimple;  // the op's protocol
  size_t slotElements = 0;  // elements of one piece: what one slot of slotKind holds
  algorithms::Reduction partialReduction;  // combines partial results (steps with srcIsPartial)
  bool streamsOutput = false;  // writes into the user's buffers bypass the caches (streamsOutput())
  // Pieces run in rounds within a phase (algorithms/step.h): piece k of every step of steps
  // [phaseBegin, phaseEnd), then piece k + 1; the next phase starts after the last round.
  size_t phaseBegin = 0;
  size_t phaseEnd = 0;
  size_t round = 0;
  size_t step = 0;    // the current step, in [phaseBegin, phaseEnd)
  size_t rounds = 0;  // pieces of the phase's longest step
  bool started = false;  // holds the head of every connection queue it uses
  bool finished = false;
  int firstQueue = 0;    // this lane's entries in laneQueues__ are [firstQueue, firstQueue + queueCount)
  int queueCount = 0;
  int firstGuard = 0;    // this lane's guards are guards_[firstGuard, firstGuard + guardCount)
  int guardCount = 0;
  uint64_t sequence = 0;  // the op's number on its communicator
  // A direct collective (direct_collectives.h) runs as lanes of three kinds: its descriptor
  // allgather, then the lane that does this rank's part (computes, moves no slots), then its done
  // allgather; each waits for the previous one.
  int dependsOn = -1;                // lane that must finish before this one starts
  DirectWork* directCompute = nullptr;  // set on the lane that does this rank's part
  char* scratch = nullptr;              // the op's scratch (BufferKind::kScratch)
  // What the lane waited for when it last stopped (for hang reports).
  int blockedPeer = -1;
  core::WaitDirection blockedDirection = core::WaitDirection::kNone;

  Status blockOn(int peer, core::WaitDirection direction) {
    blockedPeer = peer;
    blockedDirection = direction;
    return Status::ok();
  }

  /// Sets the lane back to its start for `op`, the operation it was built for called again
  /// (HostExecutor::PlanKey): what differs between the calls is read from `op` when the lane runs.
  void restart(const core::Op& newOp, uint64_t newSequence) {
    op = &newOp;
    sequence = newSequence;
    partialReduction = algorithms::combiningPartials(newOp.reduction);
    started = finished = false;
    blockedPeer = -1;
    blockedDirection = core::WaitDirection::kNone;
    startPhase(0);
  }

  /// Starts the phase whose first step is `begin` (a lane without steps has one empty phase).
  void startPhase(size_t begin) {
    const std::vector<Step>& steps = lane->steps;
    phaseBegin = step = begin;
    phaseEnd = begin < steps.size() ? algorithms::phaseEnd(steps, begin) : begin;
    round = rounds = 0;
    for (size_t s = phaseBegin; s < phaseEnd; ++s) {
      rounds = std::max(rounds, (steps[s].count + slotElements - 1) / slotElements);
    }
  }
};

// The lanes that use one connection end, in call order; only the lane at `head` may use it.
struct HostExecutor::EndpointQueue {
  const void* endpoint = nullptr;
  transport::SendConnection* send = nullptr;  // set when the end is a sending end
  transport::RecvConnection* recv = nullptr;  // set when the end is a receiving end
  int peer = -1;                  // the rank at the other end
  bool takesLandings = false;     // recv->takesLandings()
  std::vector<int> lanes;
  size_t head = 0;
};

// The scratch of one direct collective: the two allgathers' operations, buffers and programs.
struct HostExecutor::DirectWork {
  const core::Op* op = nullptr;  // the collective
  DirectDescriptor mine;
  std::vector<DirectDescriptor> all;
  uint8_t doneMine = 1;
  std::vector<uint8_t> doneAll;
  core::Op descriptorOp;  // allgather of `mine` into `all`
  core::Op doneOp;        // allgather of `doneMine` into `doneAll`
  algorithms::Program descriptorProgram;
  algorithms::Program doneProgram;
};

namespace {

// The lane of a direct collective's compute step: no steps, no connections.
const Lane kComputeLane{};

// Whether `op` writes the user's buffers with non-temporal stores (WEFT_STREAM_MIN_BYTES): a
// message this large is not read again before other data has pushed it out of the caches, and
// streaming it saves reading every line before it is overwritten (up to 19% on a 2-rank
// allreduce of 64-256 MiB out of place; docs/PERFORMANCE.md, "What each change bought").
bool streamsOutput(const core::Op& op) {
  const size_t minBytes = op.comm->streamMinBytes();
  return minBytes > 0 && op.count * algorithms::dataTypeSize(op.type) >= minBytes;
}

// Whether two outputs sit alike relative to the widest vector the reduce kernels store (64
// bytes), as one reduce needs to stream both (algorithms/reduce.h).
bool alignedAlike(const void* first, const void* second) {
  return (reinterpret_cast<uintptr_t>(first) - reinterpret_cast<uintptr_t>(second)) % 64 == 0;
}

char* bufferAddress(const core::Op& op, const algorithms::BufferSlice& slice, size_t elementSize, size_t done,
                    char* scratch) {
  char* base = slice.buffer == BufferKind::kSend    ? const_cast<char*>(static_cast<const char*>(op.sendbuff))
               : slice.buffer == BufferKind::kScratch ? scratch
                                                      : static_cast<char*>(op.recvbuff);
  return base + (slice.offset + done) * elementSize;
}

// Elements of scratch the program uses (algorithms::BufferKind::kScratch).
size_t scratchElements(const algorithms::Program& program) {
  size_t elements = 0;
  for (const Lane& lane : program.lanes) {
    for (const Step& step : lane.steps) {
      for (const algorithms::BufferSlice* slice : {&step.src, &step.dst}) {
        if (slice->buffer == BufferKind::kScratch) elements = std::max(elements, slice->offset + step.count);
      }
    }
  }
  return elements;
}

// The slots a protocol moves its pieces through.
transport::SlotKind slotKindOf(const algorithms::TuneChoice& choice) {
  return choice.protocol == algorithms::Protocol::kLL ? transport::SlotKind::kLowLatency : transport::SlotKind::kSimple;
}

// True for an allreduce that the pair exchange serves (docs/PERFORMANCE.md, "What each change
// bought": about twice as fast as the ring from 8 B to 4 MiB): two ranks, an operator whose result
// has the same bits in either operand order, and data that fits the connection's slots, since
// each rank posts all of its input before it takes the peer's.
bool usesPairExchange(const core::Op& op, transport::SlotKind slotKind) {
  if (op.collective != Collective::kAllReduce || op.comm->nranks() != 2) return false;
  const algorithms::RedOpKind kind = op.reduction.kind;
  if (kind != algorithms::RedOpKind::kSum && kind != algorithms::RedOpKind::kProd &&
      kind != algorithms::RedOpKind::kPreMulSum) {
    return false;
  }
  const core::ConnectionTable& table = op.comm->connections();
  const size_t buffered = table.pieceBytes(slotKind) * static_cast<size_t>(table.slotCount());
  return op.count * algorithms::dataTypeSize(op.type) <= buffered;
}

// Whether `op`, with the tuner's `choice`, runs direct (direct_collectives.h): in windows every
// rank reaches, whatever the tuner weighed (it reads each input and writes each output once, in
// place); an allreduce through cross-memory attach, where the tuner chose the ring on Simple slots
// and the message is too large for the pair exchange.
bool runsAsDirect(const core::Op& op, const algorithms::TuneChoice& choice) {
  if (runsInWindows(op)) return true;
  const transport::SlotKind slotKind = slotKindOf(choice);
  return choice.algorithm == algorithms::Algorithm::kRing && slotKind != transport::SlotKind::kLowLatency &&
         !usesPairExchange(op, slotKind) && runsThroughCrossMemoryAttach(op);
}

// The TUNING line of one choice: every candidate's predicted time, on its fastest channel count.
void logPredictions(const algorithms::TuneShape& shape, const algorithms::CostModel& model,
                    const algorithms::TuneChoice& choice) {
  char predictions[256];
  int used = 0;
  for (algorithms::Algorithm algorithm : algorithms::kWeftAlgorithms) {
    for (algorithms::Protocol protocol : algorithms::kWeftProtocols) {
      double us = 0;
      const algorithms::TuneChoice best = algorithms::fastestChannels(algorithm, protocol, shape, model, &us);
      if (us == std::numeric_limits<double>::infinity() || used >= static_cast<int>(sizeof(predictions))) continue;
      used += snprintf(predictions + used, sizeof(predictions) - used, "%s%s/%s/%d %.1f", used > 0 ? ", " : "",
                       algorithms::algorithmName(algorithm), algorithms::protocolName(protocol), best.channels, us);
    }
  }
  WEFT_INFO(log::kTuning, "%s of %zu bytes on %d ranks: %s/%s on %d of %d channel(s) (predicted us: %s)",
            algorithms::collectiveName(shape.collective), shape.bytes, shape.nranks,
            algorithms::algorithmName(choice.algorithm), algorithms::protocolName(choice.protocol), choice.channels,
            shape.channels, predictions);
}

// The algorithm, protocol and channel count for `op` on host memory: the tuner's choice among
// those NCCL_ALGO and NCCL_PROTO allow (the two-rank allreduce and the direct collectives are forms
// of the ring). Collectives that NCCL_ALGO does not govern run with Simple on every channel. Fails
// where the filters allow nothing Weft has for the collective.
Status pickAlgorithm(const core::Op& op, algorithms::TuneChoice* choice) {
  *choice = algorithms::ungovernedChoice(static_cast<int>(op.comm->rings().size()));
  if (!algorithms::governedByAlgo(op.collective)) return Status::ok();
  const core::Communicator& comm = *op.comm;
  const algorithms::CostModel& model = comm.costModel();
  if (op.internal) {  // never the memo's: that is for the application's calls, which the filters govern
    static const algorithms::AlgorithmFilter kEveryAlgorithm = algorithms::AlgorithmFilter::all();
    static const algorithms::ProtocolFilter kEveryProtocol = algorithms::ProtocolFilter::all();
    if (algorithms::chooseAlgorithm(core::tuneShapeOf(op), kEveryAlgorithm, kEveryProtocol, model, choice)) {
      return Status::ok();
    }
    return internalError("the tuner has no algorithm for Weft's own %s", algorithms::collectiveName(op.collective));
  }
  const bool logs = log::enabled(log::Level::kInfo, log::kTuning);
  core::Communicator::TuneMemo& memo = comm.tuneMemo();
  const size_t bytes = op.count * algorithms::dataTypeSize(op.type);
  if (memo.collective == op.collective && memo.bytes == bytes && !logs) {
    *choice = memo.choice;
    return Status::ok();
  }
  const algorithms::TuneShape shape = core::tuneShapeOf(op);
  if (algorithms::chooseAlgorithm(shape, comm.algorithmFilter(), comm.protocolFilter(), model, choice)) {
    if (logs) logPredictions(shape, model, *choice);
    memo = {op.collective, bytes, *choice};
    return Status::ok();
  }
  std::string names;  // the algorithms Weft has for the collective
  for (algorithms::Algorithm algorithm : algorithms::kWeftAlgorithms) {
    if (!algorithms::hasAlgorithm(algorithm, op.collective)) continue;
    names += std::string(names.empty() ? "" : ", ") + algorithms::algorithmName(algorithm);
  }
  return invalidUsage("NCCL_ALGO and NCCL_PROTO leave %s nothing that Weft has for it on host memory (algorithms: "
                      "%s; protocols: Simple and LL); allow one of each",
                      algorithms::collectiveName(op.collective), names.c_str());
}

}  // namespace

HostExecutor::HostExecutor() = default;
HostExecutor::~HostExecutor() = default;

HostExecutor& threadHostExecutor() {
  thread_local HostExecutor executor;
  return executor;
}

void HostExecutor::prepareDirectWork(const core::Op& op, DirectWork* work) {
  const int nranks = op.comm->nranks();
  work->op = &op;
  work->mine = describeBuffers(op);
  work->all.resize(nranks);
  work->doneAll.resize(nranks);
  auto allgather = [&op](const void* send, void* recv, size_t bytes) {
    core::Op gather;
    gather.comm = op.comm;
    gather.collective = algorithms::Collective::kAllGather;
    gather.sendbuff = send;
    gather.recvbuff = recv;
    gather.count = bytes;
    gather.type = algorithms::DataType::kUint8;
    gather.reduction.type = algorithms::DataType::kUint8;
    return gather;
  };
  work->descriptorOp = allgather(&work->mine, work->all.data(), sizeof(DirectDescriptor));
  work->doneOp = allgather(&work->doneMine, work->doneAll.data(), 1);
  // Channel 0's ring only: its connections exist from init.
  std::span<const algorithms::Ring> ring(op.comm->rings().data(), 1);
  algorithms::buildRingProgram(core::shapeOf(work->descriptorOp), ring, &work->descriptorProgram);
  algorithms::buildRingProgram(core::shapeOf(work->doneOp), ring, &work->doneProgram);
}

Status HostExecutor::plan(std::span<const core::Op> ops) {
  PlanKey key;
  if (ops.size() == 1) {
    const core::Op& op = ops[0];
    key = {op.comm->instanceId(), op.collective, op.count, op.type, op.root, op.reduction.kind, choices_[0]};
    // The last plan never runs direct (below), and whether this call does depends on its buffers
    // (windows), which the key does not hold.
    if (key == lastPlan_ && !runsAsDirect(op, choices_[0])) {
      for (LaneState& lane : lanes_) lane.restart(op, sequences_[0]);
      for (EndpointQueue& queue : queues_) queue.head = 0;
      buildGuards();  // the buffers, and so what overlaps, may differ from the last call's
      return Status::ok();
    }
  }
  lastPlan_ = PlanKey{};
  WEFT_RETURN_IF_ERROR(buildPrograms(ops));
  WEFT_RETURN_IF_ERROR(connectMissing(ops));
  buildQueues(ops);
  buildGuards();
  // A direct collective's lanes depend on one another and on its buffers: it is built anew.
  if (ops.size() == 1 && !runsDirect_[0]) lastPlan_ = key;
  return Status::ok();
}

Status HostExecutor::chooseAlgorithms(std::span<const core::Op> ops) {
  choices_.resize(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) WEFT_RETURN_IF_ERROR(pickAlgorithm(ops[i], &choices_[i]));
  return Status::ok();
}

Status HostExecutor::buildPrograms(std::span<const core::Op> ops) {
  if (programs_.size() < ops.size()) programs_.resize(ops.size());
  directsUsed_ = 0;
  runsDirect_.assign(ops.size(), 0);
  for (size_t i = 0; i < ops.size(); ++i) {
    const algorithms::TuneChoice& choice = choices_[i];
    const transport::SlotKind slotKind = slotKindOf(choice);
    const core::Communicator& comm = *ops[i].comm;
    const std::span<const algorithms::Ring> rings =
        std::span<const algorithms::Ring>(comm.rings()).first(static_cast<size_t>(choice.channels));
    if (runsAsDirect(ops[i], choice)) {
      runsDirect_[i] = 1;
      programs_[i].lanes.clear();
      if (directsUsed_ == directs_.size()) directs_.push_back(std::make_unique<DirectWork>());
      prepareDirectWork(ops[i], directs_[directsUsed_++].get());
      continue;
    }
    if (choice.algorithm == algorithms::Algorithm::kPat) {
      if (ops[i].collective == Collective::kAllGather) {
        algorithms::buildBruckAllGather(core::shapeOf(ops[i]), &programs_[i]);
      } else {
        algorithms::buildBruckReduceScatter(core::shapeOf(ops[i]), &programs_[i]);
      }
      continue;
    }
    if (choice.algorithm == algorithms::Algorithm::kRhd) {
      algorithms::buildRhdAllReduce(core::shapeOf(ops[i]), &programs_[i]);
      continue;
    }
    if (choice.algorithm == algorithms::Algorithm::kTree) {
      if (ops[i].collective == Collective::kBroadcast || ops[i].collective == Collective::kReduce) {
        const std::vector<algorithms::TreePlace> trees =
            algorithms::rootedTreePlaces(rings, comm.hostOfRank(), ops[i].root, comm.rank());
        if (ops[i].collective == Collective::kBroadcast) {
          algorithms::buildTreeBroadcast(core::shapeOf(ops[i]), trees, &programs_[i]);
        } else {
          algorithms::buildTreeReduce(core::shapeOf(ops[i]), trees, &programs_[i]);
        }
      } else {
        // Two lanes per tree rank pay off once a tree's part spans several pieces (PERFORMANCE.md).
        const std::span<const algorithms::TreePlace> trees =
            std::span<const algorithms::TreePlace>(comm.treePlaces()).first(static_cast<size_t>(choice.channels));
        const size_t slotElements = ops[i].comm->connections().pieceBytes(slotKind) / algorithms::dataTypeSize(ops[i].type);
        const algorithms::TreeLanes lanes =
            ops[i].count / trees.size() > slotElements ? algorithms::TreeLanes::kTwo : algorithms::TreeLanes::kOne;
        algorithms::buildTreeAllReduceOnTrees(core::shapeOf(ops[i]), trees, lanes, &programs_[i]);
      }
      continue;
    }
    // The pair exchange first: where both apply, the data is small enough for it.
    if (usesPairExchange(ops[i], slotKind)) {
      algorithms::buildPairExchangeAllReduce(core::shapeOf(ops[i]), rings, &programs_[i]);
      continue;
    }
    algorithms::buildRingProgram(core::shapeOf(ops[i]), rings, &programs_[i]);
  }
  return Status::ok();
}

Status HostExecutor::connectMissing(std::span<const core::Op> ops) {
  return connectPrograms(ops, std::span<const algorithms::Program>(programs_.data(), ops.size()),
                         [](const core::Op& op) -> core::ConnectionTable& { return op.comm->connections(); });
}

void HostExecutor::buildQueues(std::span<const core::Op> ops) {
  lanes_.clear();
  for (EndpointQueue& queue : queues_) {
    queue.endpoint = nullptr;
    queue.send = nullptr;
    queue.recv = nullptr;
    queue.peer = -1;
    queue.takesLandings = false;
    queue.lanes.clear();
    queue.head = 0;
  }
  size_t queuesUsed = 0;
  laneQueues_.clear();
  auto queueFor = [&](const void* endpoint, transport::SendConnection* send, transport::RecvConnection* recv,
                      int peer) -> int {
    for (size_t q = 0; q < queuesUsed; ++q) {
      if (queues_[q].endpoint == endpoint) return static_cast<int>(q);
    }
    if (queuesUsed == queues_.size()) queues_.emplace_back();
    EndpointQueue& queue = queues_[queuesUsed];
    queue.endpoint = endpoint;
    queue.send = send;
    queue.recv = recv;
    queue.peer = peer;
    queue.takesLandings = recv != nullptr && recv->takesLandings();
    return static_cast<int>(queuesUsed++);
  };
  // Adds the lane `lane` of `op`, queued on the connection ends it uses; returns its index.
  auto addLane = [&](const core::Op& op, const Lane& lane, uint64_t sequence, int dependsOn,
                     transport::SlotKind slotKind) {
    core::ConnectionTable& table = op.comm->connections();
    LaneState state;
    state.op = &op;
    state.lane = &lane;
    state.elementSize = algorithms::dataTypeSize(op.type);
    state.slotKind = slotKind;
    state.slotElements = table.pieceBytes(slotKind) / state.elementSize;
    state.partialReduction = algorithms::combiningPartials(op.reduction);
    state.streamsOutput = streamsOutput(op);
    state.startPhase(0);
    state.sequence = sequence;
    state.dependsOn = dependsOn;
    state.firstQueue = static_cast<int>(laneQueues_.size());
    const int laneIndex = static_cast<int>(lanes_.size());
    auto use = [&](const void* endpoint, transport::SendConnection* send, transport::RecvConnection* recv, int peer) {
      int queue = queueFor(endpoint, send, recv, peer);
      for (int k = state.firstQueue; k < static_cast<int>(laneQueues_.size()); ++k) {
        if (laneQueues_[k] == queue) return;
      }
      laneQueues_.push_back(queue);
      queues_[queue].lanes.push_back(laneIndex);
    };
    for (const Step& step : lane.steps) {
      if (step.sendPeer >= 0) {
        use(table.send(lane.channel, step.sendPeer), table.send(lane.channel, step.sendPeer), nullptr, step.sendPeer);
      }
      if (step.recvPeer >= 0) {
        use(table.recv(lane.channel, step.recvPeer), nullptr, table.recv(lane.channel, step.recvPeer), step.recvPeer);
      }
    }
    state.queueCount = static_cast<int>(laneQueues_.size()) - state.firstQueue;
    lanes_.push_back(state);
    return laneIndex;
  };
  size_t nextDirect = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!runsDirect_[i]) {
      const size_t scratchBytes = scratchElements(programs_[i]) * algorithms::dataTypeSize(ops[i].type);
      if (opScratch_.size() <= i) opScratch_.resize(i + 1);
      if (opScratch_[i].size() < scratchBytes) opScratch_[i].resize(scratchBytes);
      for (const Lane& lane : programs_[i].lanes) {
        lanes_[addLane(ops[i], lane, sequences_[i], -1, slotKindOf(choices_[i]))].scratch = opScratch_[i].data();
      }
      continue;
    }
    DirectWork* work = directs_[nextDirect++].get();
    int previous = -1;
    for (const Lane& lane : work->descriptorProgram.lanes) {
      previous = addLane(work->descriptorOp, lane, sequences_[i], previous, transport::SlotKind::kSimple);
    }
    LaneState compute;
    compute.op = &ops[i];
    compute.lane = &kComputeLane;
    compute.elementSize = algorithms::dataTypeSize(ops[i].type);
    compute.sequence = sequences_[i];
    compute.dependsOn = previous;
    compute.directCompute = work;
    compute.firstQueue = static_cast<int>(laneQueues_.size());
    previous = static_cast<int>(lanes_.size());
    lanes_.push_back(compute);
    for (const Lane& lane : work->doneProgram.lanes) {
      previous = addLane(work->doneOp, lane, sequences_[i], previous, transport::SlotKind::kSimple);
    }
  }
}

namespace {

// Whether the lanes of one `collective` are independent transfers (all-to-all, gather, scatter),
// none waiting for another's data, so that one lane's receive may overwrite what another sends.
bool hasIndependentLanes(Collective collective) {
  return collective == Collective::kAllToAll || collective == Collective::kGather ||
         collective == Collective::kScatter;
}

// Pieces of step `step` that `lane` has finished (SIZE_MAX: all of them).
size_t finishedPieces(bool started, bool finished, size_t phaseBegin, size_t phaseEnd, size_t round, size_t current,
                      size_t step) {
  if (finished) return SIZE_MAX;
  if (!started || step >= phaseEnd) return 0;
  if (step < phaseBegin) return SIZE_MAX;
  return round + (step < current ? 1 : 0);
}

}  // namespace

void HostExecutor::buildGuards() {
  guards_.clear();
  // Only lanes of different operations, or of one with independent lanes, can be guarded.
  const bool mayOverlap = std::any_of(lanes_.begin(), lanes_.end(), [&](const LaneState& lane) {
    return lane.op != lanes_.front().op || hasIndependentLanes(lane.op->collective);
  });
  for (size_t l = 0; l < lanes_.size(); ++l) {
    LaneState& lane = lanes_[l];
    lane.firstGuard = static_cast<int>(guards_.size());
    for (size_t s = 0; mayOverlap && s < lane.lane->steps.size(); ++s) {
      const Step& step = lane.lane->steps[s];
      const UserBytes dst = userBytes(*lane.op, step.dst, step.count, lane.elementSize);
      if (step.recvPeer < 0 || dst.empty()) continue;
      for (size_t other = 0; other < lanes_.size(); ++other) {
        const LaneState& sender = lanes_[other];
        if (other == l || (sender.op == lane.op && !hasIndependentLanes(lane.op->collective))) continue;
        for (size_t t = 0; t < sender.lane->steps.size(); ++t) {
          const Step& send = sender.lane->steps[t];
          const UserBytes src = userBytes(*sender.op, send.src, send.count, sender.elementSize);
          if (send.sendPeer < 0 || !src.overlaps(dst)) continue;
          guards_.push_back(Guard{s, static_cast<int>(other), t, src});
        }
      }
    }
    lane.guardCount = static_cast<int>(guards_.size()) - lane.firstGuard;
  }
}

bool HostExecutor::guarded(const LaneState& lane, size_t step) const {
  for (int g = lane.firstGuard; g < lane.firstGuard + lane.guardCount; ++g) {
    if (guards_[g].step == step) return true;
  }
  return false;
}

bool HostExecutor::guardHolds(const LaneState& state) const {
  const Step& step = state.lane->steps[state.step];
  const size_t begin = state.round * state.slotElements;
  const char* pieceBegin = bufferAddress(*state.op, step.dst, state.elementSize, begin, nullptr);
  const UserBytes piece{pieceBegin, pieceBegin + std::min(step.count - begin, state.slotElements) * state.elementSize};
  for (int g = state.firstGuard; g < state.firstGuard + state.guardCount; ++g) {
    const Guard& guard = guards_[g];
    if (guard.step != state.step || !guard.src.overlaps(piece)) continue;
    const LaneState& sender = lanes_[guard.sendLane];
    // The sender's last piece that reads any of these bytes must have been sent.
    const size_t senderPieceBytes = sender.slotElements * sender.elementSize;
    const size_t lastPiece =
        static_cast<size_t>(std::min(piece.end, guard.src.end) - 1 - guard.src.begin) / senderPieceBytes;
    const size_t finished = finishedPieces(sender.started, sender.finished, sender.phaseBegin, sender.phaseEnd,
                                           sender.round, sender.step, guard.sendStep);
    if (finished <= lastPiece) return true;
  }
  return false;
}

Status HostExecutor::advance(LaneState& state, bool* progressed) {
  int laneIndex = static_cast<int>(&state - lanes_.data());
  if (state.dependsOn >= 0 && !lanes_[state.dependsOn].finished) return state.blockOn(-1, core::WaitDirection::kQueued);
  if (state.directCompute != nullptr) {
    WEFT_RETURN_IF_ERROR(runOwnPart(*state.directCompute->op, state.directCompute->all,
                                    streamsOutput(*state.directCompute->op), &directScratch_));
    state.finished = true;
    *progressed = true;
    return Status::ok();
  }
  if (!state.started) {
    for (int k = 0; k < state.queueCount; ++k) {
      const EndpointQueue& queue = queues_[laneQueues_[state.firstQueue + k]];
      if (queue.lanes[queue.head] != laneIndex) return state.blockOn(-1, core::WaitDirection::kQueued);
    }
    state.started = true;
    WEFT_RETURN_IF_ERROR(announceLandings(state));
  }
  const core::Op& op = *state.op;
  core::ConnectionTable& table = op.comm->connections();
  const size_t size = state.elementSize;
  const std::vector<Step>& steps = state.lane->steps;
  // Rounds keep a ring from deadlocking on full connections: every rank's first step only sends,
  // so step-by-step execution would need a whole step's pieces to fit in the slots.
  while (state.round < state.rounds || state.phaseEnd < steps.size()) {
    if (state.round == state.rounds) {
      state.startPhase(state.phaseEnd);
      WEFT_RETURN_IF_ERROR(announceLandings(state));
      continue;
    }
    if (state.step == state.phaseEnd) {
      state.step = state.phaseBegin;
      ++state.round;
      continue;
    }
    const Step& step = steps[state.step];
    const size_t begin = state.round * state.slotElements;
    if (begin >= step.count) {
      ++state.step;
      continue;
    }
    const size_t piece = std::min(step.count - begin, state.slotElements);
    const void* received = nullptr;
    transport::RecvConnection* recv = nullptr;
    if (step.recvPeer >= 0) {
      recv = table.recv(state.lane->channel, step.recvPeer);
      size_t bytes = 0;
      WEFT_RETURN_IF_ERROR(recv->tryPeekSlot(&received, &bytes, state.slotKind));
      if (received == nullptr) return state.blockOn(step.recvPeer, core::WaitDirection::kReceive);
      if (state.guardCount > 0 && guardHolds(state)) return state.blockOn(-1, core::WaitDirection::kQueued);
      if (bytes != piece * size) {
        return internalError("rank %d received %zu bytes from rank %d where %zu were expected (%s, channel %d): "
                             "the ranks are not calling the same operations with the same counts (or an "
                             "collective's buffers lie in windows on some ranks only: WEFT_CHECK=1 says which)",
                             op.comm->rank(), bytes, step.recvPeer, piece * size,
                             algorithms::collectiveName(op.collective), state.lane->channel);
      }
    }
    void* slot = nullptr;
    transport::SendConnection* send = nullptr;
    if (step.sendPeer >= 0) {
      send = table.send(state.lane->channel, step.sendPeer);
      WEFT_RETURN_IF_ERROR(send->tryAcquireSlot(&slot, state.slotKind));
      if (slot == nullptr) return state.blockOn(step.sendPeer, core::WaitDirection::kSend);
    }
    char* src = step.src.present() ? bufferAddress(op, step.src, size, begin, state.scratch) : nullptr;
    char* dst = step.dst.present() ? bufferAddress(op, step.dst, size, begin, state.scratch) : nullptr;
    void* out = dst != nullptr ? static_cast<void*>(dst) : slot;
    void* out2 = dst != nullptr ? slot : nullptr;
    bool streamDst = state.streamsOutput && dst != nullptr && step.dst.buffer != BufferKind::kScratch;
    const bool streamSlot = send != nullptr && send->streamsSlot();
    // A reduce streams two outputs together only where they are aligned alike; else the slot,
    // whose streaming gains the most, streams alone.
    if (streamDst && streamSlot && step.contribute && !alignedAlike(dst, slot)) streamDst = false;
    const bool streamOut = dst != nullptr ? streamDst : streamSlot;
    const bool streamOut2 = out2 != nullptr && streamSlot;
    if (step.contribute) {
      const algorithms::Reduction& reduction = step.srcIsPartial ? state.partialReduction : op.reduction;
      algorithms::reduce(reduction, {src, received, out, out2, piece, step.finalize, streamOut, streamOut2});
    } else {
      // In place (from == out) copyTo only sends what is already where it belongs.
      const void* from = received != nullptr ? received : src;
      algorithms::copyTo(from, out, out2, piece * size, streamOut, streamOut2);
    }
    if (send != nullptr) WEFT_RETURN_IF_ERROR(send->postSlot(piece * size));
    if (recv != nullptr) WEFT_RETURN_IF_ERROR(recv->releaseSlot());
    ++state.step;
    *progressed = true;
  }
  state.finished = true;
  for (int k = 0; k < state.queueCount; ++k) ++queues_[laneQueues_[state.firstQueue + k]].head;
  *progressed = true;
  return Status::ok();
}

Status HostExecutor::announceLandings(const LaneState& state) {
  for (int k = state.firstQueue; k < state.firstQueue + state.queueCount; ++k) {
    const EndpointQueue& queue = queues_[laneQueues_[k]];
    if (!queue.takesLandings) continue;
    phaseLandings(*state.op, *state.lane, state.phaseBegin, state.phaseEnd, state.slotElements, queue.peer,
                  state.op->comm->registrations(), [&](size_t step) { return guarded(state, step); }, &landings_);
    WEFT_RETURN_IF_ERROR(queue.recv->expectLandings(landings_));
  }
  return Status::ok();
}

namespace {

void describeOp(const core::Op& op, uint64_t sequence, core::ProgressState state, core::ProgressRecord* record) {
  core::recordCall(record, state, static_cast<int>(op.collective), static_cast<int>(op.type), op.count, sequence);
}

}  // namespace

void HostExecutor::describeLane(const LaneState& lane, core::ProgressRecord* record) const {
  describeOp(*lane.op, lane.sequence, core::ProgressState::kWaiting, record);
  record->channel.store(lane.lane->channel, std::memory_order_relaxed);
  record->step.store(static_cast<int>(lane.step), std::memory_order_relaxed);
  record->steps.store(static_cast<int>(lane.lane->steps.size()), std::memory_order_relaxed);
  record->piece.store(lane.round, std::memory_order_relaxed);
  record->peer.store(lane.blockedPeer, std::memory_order_relaxed);
  record->direction.store(static_cast<int>(lane.blockedDirection), std::memory_order_relaxed);
}

void HostExecutor::publishProgress(std::span<const core::Op> ops, core::ProgressState state) {
  if (state == core::ProgressState::kWaiting) {
    for (const LaneState& lane : lanes_) {
      core::ProgressRecord* record = lane.op->comm->progress();
      if (!lane.finished && record != nullptr) describeLane(lane, record);
    }
    return;
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    core::ProgressRecord* record = ops[i].comm->progress();
    if (record != nullptr) describeOp(ops[i], sequences_[i], state, record);
  }
}

std::string HostExecutor::describeWaits() const {
  std::string report;
  for (const LaneState& lane : lanes_) {
    if (lane.finished) continue;
    core::ProgressRecord record;
    record.commHash.store(lane.op->comm->commHash(), std::memory_order_relaxed);
    record.rank.store(lane.op->comm->rank(), std::memory_order_relaxed);
    record.nranks.store(lane.op->comm->nranks(), std::memory_order_relaxed);
    describeLane(lane, &record);
    std::string line = core::describeProgress(record);
    WEFT_WARN("%s", line.c_str());
    if (report.empty()) report = line;
  }
  return report;
}

Status HostExecutor::pushConnections() {
  for (const EndpointQueue& queue : queues_) {
    if (queue.endpoint == nullptr) break;
    if (queue.recv != nullptr) WEFT_RETURN_IF_ERROR(queue.recv->progress());
    if (queue.send == nullptr) continue;
    bool done = false;
    WEFT_RETURN_IF_ERROR(queue.send->tryFlush(&done));
  }
  return Status::ok();
}

Status HostExecutor::flushSends(const WaitContext& context) {
  for (const EndpointQueue& queue : queues_) {
    if (queue.endpoint == nullptr) break;
    if (queue.send == nullptr) continue;
    Waiter waiter(&context);
    bool done = false;
    while (true) {
      WEFT_RETURN_IF_ERROR(queue.send->tryFlush(&done));
      if (done) break;
      WEFT_RETURN_IF_ERROR(waiter.idle());
    }
  }
  return Status::ok();
}

Status HostExecutor::run(std::span<const core::Op> ops) {
  sequences_.clear();
  for (const core::Op& op : ops) {
    op.comm->enterCall();
    sequences_.push_back(op.comm->nextSequence());
  }
  publishProgress(ops, core::ProgressState::kRunning);
  // A refusal here (NCCL_ALGO and NCCL_PROTO leave a collective nothing) comes before anything
  // started. Of a call alone, every rank refuses it alike (the filters are rank 0's): the
  // communicator stays usable. In a group it ends the group's communicators, as any failure: ranks
  // may group their calls differently, and a peer may already wait in another of the calls.
  Status status = chooseAlgorithms(ops);
  const bool refusedAlone = !status.isOk() && ops.size() == 1;
  if (status.isOk()) status = [&]() -> Status {
    WEFT_RETURN_IF_ERROR(plan(ops));
    WaitContext context;
    context.check = [ops]() -> Status {
      for (const core::Op& op : ops) WEFT_RETURN_IF_ERROR(op.comm->waitContext().check());
      return Status::ok();
    };
    context.timeoutSeconds = ops.empty() ? 0 : ops[0].comm->waitContext().timeoutSeconds;
    context.spinLimit = ops.empty() ? -1 : ops[0].comm->waitContext().spinLimit;
    // Short enough to stay in the string's own storage: no allocation on the call path.
    context.what = ops.empty() ? "" : algorithms::collectiveName(ops[0].collective);
    Waiter waiter(&context);
    size_t remaining = lanes_.size();
    bool published = false;  // the current wait is in the progress records
    while (remaining > 0) {
      bool progressed = false;
      for (LaneState& lane : lanes_) {
        if (lane.finished) continue;
        WEFT_RETURN_IF_ERROR(advance(lane, &progressed));
        if (lane.finished) --remaining;
      }
      // A lane that has posted its last piece no longer drives its sending ends; a network end may
      // still hold frames that a peer needs before it can finish, and a receiving end that no lane
      // has reached yet may have to finish its setup before its sender can start (Bruck's steps
      // send to one peer before they receive from another): idle turns move both on.
      if (!progressed) WEFT_RETURN_IF_ERROR(pushConnections());
      if (progressed) {
        waiter.progressed();
        published = false;
        continue;
      }
      if (!published) publishProgress(ops, core::ProgressState::kWaiting);
      published = true;
      Status idle = waiter.idle();
      if (!idle.isOk()) return Status(idle.code(), idle.message() + "; this rank waits in " + describeWaits());
    }
    return flushSends(context);
  }();
  publishProgress(ops, core::ProgressState::kIdle);
  if (!status.isOk() && !refusedAlone) lastPlan_ = PlanKey{};  // the lanes may have stopped midway
  if (!status.isOk() && !refusedAlone && status.code() != StatusCode::kInvalidArgument) {
    status = ops[0].comm->explainRemoteFailure(status);
    for (const core::Op& op : ops) op.comm->setAsyncError(status);
  }
  for (const core::Op& op : ops) op.comm->exitCall();
  return status;
}

}  // namespace weft::exec
