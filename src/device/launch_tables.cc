#include "src/device/launch_tables.h"

#include <algorithm>

#include "algorithms/tuner.h"

namespace weft::device {

// The consecutive piece indices that clean LL slots (kernel_work.h) must cover every slot of a
// connection.
static_assert((~kLowLatencyCleanMask & 0x7fffffffu) + 1 == algorithms::kSlotsPerConnection);

namespace {

uint64_t endpointKey(int channel, int peer, bool send) {
  return (static_cast<uint64_t>(channel) << 33) | (static_cast<uint64_t>(peer) << 1) | (send ? 1 : 0);
}

Status bufferCode(algorithms::BufferKind kind, uint8_t* code) {
  switch (kind) {
    case algorithms::BufferKind::kNone: *code = kNoBuffer; return Status::ok();
    case algorithms::BufferKind::kSend: *code = kSendBuffer; return Status::ok();
    case algorithms::BufferKind::kRecv: *code = kRecvBuffer; return Status::ok();
    case algorithms::BufferKind::kScratch: break;
  }
  return internalError("a step using scratch memory reached the GPU executor, whose kernels run no trees");
}

}  // namespace

Status LaunchTables::connectionIndex(int channel, int peer, bool send, int32_t* index) {
  const uint64_t key = endpointKey(channel, peer, send);
  auto known = connectionIndices_.find(key);
  if (known == connectionIndices_.end()) {
    WEFT_RETURN_IF_ERROR(addConnection_(channel, peer, send));
    known = connectionIndices_.emplace(key, static_cast<int32_t>(connectionPieces_.size())).first;
    connectionPieces_.push_back(0);
  }
  *index = known->second;
  return Status::ok();
}

Status LaunchTables::addOp(const algorithms::Program& program, const void* sendbuff, void* recvbuff,
                           uint64_t scale) {
  for (const algorithms::Lane& lane : program.lanes) {
    KernelLane entry;
    PlannedLane plan;
    entry.firstStep = static_cast<uint32_t>(steps_.size());
    entry.sendbuff = const_cast<char*>(static_cast<const char*>(sendbuff));
    entry.recvbuff = static_cast<char*>(recvbuff);
    plan.chained = lane.steps.size() != 1;
    for (const algorithms::Step& step : lane.steps) {
      if (step.srcIsPartial) {
        return internalError("a step combining partial results reached the GPU executor, whose kernels only run "
                             "ring programs");
      }
      KernelStep k;
      k.count = step.count * scale;
      const uint64_t pieces = (k.count + pieceUnits_ - 1) / pieceUnits_;
      if (step.recvPeer >= 0) {
        WEFT_RETURN_IF_ERROR(connectionIndex(lane.channel, step.recvPeer, false, &k.recvConnection));
        plan.endpoints.push_back(endpointKey(lane.channel, step.recvPeer, false));
        plan.recvPeer = step.recvPeer;
        connectionPieces_[k.recvConnection] += pieces;
      }
      if (step.sendPeer >= 0) {
        WEFT_RETURN_IF_ERROR(connectionIndex(lane.channel, step.sendPeer, true, &k.sendConnection));
        plan.endpoints.push_back(endpointKey(lane.channel, step.sendPeer, true));
        plan.sendPeer = step.sendPeer;
        connectionPieces_[k.sendConnection] += pieces;
      }
      WEFT_RETURN_IF_ERROR(bufferCode(step.src.buffer, &k.srcBuffer));
      WEFT_RETURN_IF_ERROR(bufferCode(step.dst.buffer, &k.dstBuffer));
      k.contribute = step.contribute ? 1 : 0;
      k.finalize = step.finalize ? 1 : 0;
      k.srcOffset = step.src.offset * scale;
      k.dstOffset = step.dst.offset * scale;
      entry.rounds = std::max(entry.rounds, pieces);
      steps_.push_back(k);
    }
    entry.stepCount = static_cast<uint32_t>(steps_.size()) - entry.firstStep;
    plan.rounds = entry.rounds;
    lanes_.push_back(entry);
    planned_.push_back(std::move(plan));
  }
  return Status::ok();
}

Status LaunchTables::layOut(int rank, int nranks, int blockLimit, uint64_t window, KernelTables* out) const {
  BlockPlan plan;
  WEFT_RETURN_IF_ERROR(planBlocks(planned_, rank, nranks, blockLimit, window, &plan));
  out->blocks.clear();
  out->runs.clear();
  out->lanes.clear();
  out->steps = steps_;
  for (const PlannedBlock& planned : plan) {
    KernelBlock block;
    block.firstRun = static_cast<uint32_t>(out->runs.size());
    block.runCount = static_cast<uint32_t>(planned.runs.size());
    const auto firstLane = static_cast<uint32_t>(out->lanes.size());
    for (KernelRun run : planned.runs) {
      run.firstLane += firstLane;
      out->runs.push_back(run);
    }
    for (uint32_t lane : planned.lanes) out->lanes.push_back(lanes_[lane]);
    out->blocks.push_back(block);
  }
  return Status::ok();
}

}  // namespace weft::device
