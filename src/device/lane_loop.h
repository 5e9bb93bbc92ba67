#pragma once
// The step kernel's lane loop: how one thread block runs its lanes' steps through the connections'
// slots (src/device/kernel_work.h), as the host executor does through host connections
// (src/exec/host_executor.cc). Written for any block type (src/device/kernel_block.h): the
// kernel runs it on the GPU (src/device/step_kernel.cu), unit tests on host threads
// (tests/unit/lane_loop_test.cc).
//
// Per piece, thread 0 waits (acquire loads, polling ncclCommAbort's flag) until the received
// slot is posted and the slot to send into is free, and leaves the slots' addresses in the
// block's shared memory; the whole block then moves the piece; after a barrier thread 0 publishes
// the sent slot (its byte count first, where the connection has a count per slot) and returns the
// received one (release stores). An LL piece needs no posted count: each thread waits for its own
// lines' flags. A block runs its runs of lanes in order, each a stretch of one lane's rounds at a
// time (run_walk.h). The work's tables live in pinned host memory: the block reads a lane's steps
// and their connections into shared memory as a stretch starts (kCachedSteps), and only a longer
// lane's pieces read them, by thread 0.

#include <cstdint>
#include <cstring>

#include "src/core/gpu_block_progress.h"
#include "src/device/host_device.h"
#include "src/device/kernel_block.h"
#include "src/device/kernel_work.h"
#include "src/device/run_walk.h"

namespace weft::device {

/// Steps of a lane that its block reads into shared memory when a stretch of its rounds starts
/// (once for a lane run whole, once per window for a folded one), with their connections: every
/// thread reads some, so the stretch waits once for pinned host memory rather than at every piece (a ring allreduce's lanes have 2n - 1 steps: 32 ranks and fewer fit, in
/// under 12 KiB). Thread 0 reads each piece's step and connections of a longer lane.
inline constexpr uint32_t kCachedSteps = 64;

/// The block's shared memory for the loop: what thread 0 reads and decides for every thread.
struct LaneLoopShared {
  KernelBlock kernelBlock;
  KernelRun run;
  KernelLane lane;
  KernelStep laneSteps[kCachedSteps];
  KernelConnection laneReceives[kCachedSteps];  // each cached step's connections
  KernelConnection laneSends[kCachedSteps];
  KernelStep step;
  unsigned long long receivedIndex;
  unsigned long long sentIndex;
  // The piece's slots and the counters thread 0 publishes, from the step's connections, which
  // only thread 0 reads once the lane has started.
  char* receivedSlot;
  char* sendSlot;
  unsigned long long* sendPosted;
  unsigned long long* sendSize;  // the sent slot's byte count (a proxied connection's)
  unsigned long long* recvReleased;
  char* cleanSlot;  // the LL slot whose lines this piece refreshes (kLowLatencyCleanMask)
  uint64_t cleanLines;
  int32_t receivedPeer;  // the received slot's connection, for the record of a long LL wait
  int32_t receivedChannel;
  int action;  // 0: run the piece, 1: no piece of this step in this round, 2: aborted
};
static_assert(sizeof(LaneLoopShared) <= kBlockSharedBytes);

/// The pointers of one piece, as a body sees them. `dst` or `slot` (or both) is set.
struct Piece {
  const char* src;       // local input, or null
  const char* received;  // the received slot, or null
  char* dst;             // local output, or null
  char* slot;            // the slot to send, or null
  uint64_t units;
  bool contribute;
  bool finalize;
};

/// Thread 0 only. Waits until a counter of `connection` plus `slack` reaches `target`: its
/// `posted` (no slack) for a piece to receive, or its `released` (plus the slot count) for a free
/// slot to send into. False if the communicator was aborted. A long wait is recorded for hang
/// reports as `activity`, with the counter seen and the value it needs.
template <class Block>
WEFT_KERNEL_CODE bool waitCounter(Block& block, const KernelConnection& connection, const unsigned long long* counter,
                                  uint64_t slack, uint64_t target, core::BlockActivity activity,
                                  const volatile int* abortFlag, const core::WaitSite& site) {
  typename Block::Wait wait(block);
  for (int polls = 0;; ++polls) {
    const unsigned long long value = block.loadAcquire(counter);
    if (static_cast<int64_t>(value + slack - target) >= 0) break;
    if (polls == kPollsPerAbortCheck) {
      if (block.aborted(abortFlag)) return false;
      wait.note(activity, connection.peer, connection.channel, site, value, target - slack);
      polls = 0;
    }
  }
  wait.end();
  return true;
}

/// Where an LL piece's lines come from, for the record of a long wait.
struct LineSource {
  core::WaitSite site;
  int32_t peer;
  int32_t channel;
};

/// Waits until the LL line at `line` carries `flag` in both halves and returns its 8 data bytes.
/// False if the communicator was aborted. A long wait is recorded for hang reports.
template <class Block>
WEFT_KERNEL_CODE bool readLine(Block& block, const char* line, uint32_t flag, const volatile int* abortFlag,
                               uint64_t* data, const LineSource& from) {
  typename Block::Wait wait(block);
  for (int polls = 0;; ++polls) {
    uint32_t words[4];
    block.loadLine(line, words);
    if (words[1] == flag && words[3] == flag) {
      *data = static_cast<uint64_t>(words[0]) | (static_cast<uint64_t>(words[2]) << 32);
      wait.end();
      return true;
    }
    if (polls == kPollsPerAbortCheck) {
      if (block.aborted(abortFlag)) return false;
      wait.note(core::BlockActivity::kReceivingLine, from.peer, from.channel, from.site, words[1], flag);
      polls = 0;
    }
  }
}

template <class Block>
WEFT_KERNEL_CODE void writeLine(Block& block, char* line, uint64_t data, uint32_t flag) {
  const uint32_t words[4] = {static_cast<uint32_t>(data), flag, static_cast<uint32_t>(data >> 32), flag};
  block.storeLine(line, words);
}

/// The `valid` (1 to 8) bytes at `address` as the low bytes of a word; one load where aligned.
WEFT_HOST_DEVICE uint64_t loadBytes(const char* address, uint64_t valid) {
  if (valid == 8 && (reinterpret_cast<uintptr_t>(address) & 7) == 0) {
#if defined(__CUDA_ARCH__)
    return *reinterpret_cast<const uint64_t*>(address);
#else
    uint64_t word;  // the buffer holds elements of another type: no aliasing through a uint64_t
    std::memcpy(&word, address, sizeof(word));
    return word;
#endif
  }
  uint64_t word = 0;
  for (uint64_t i = 0; i < valid; ++i) word |= static_cast<uint64_t>(static_cast<unsigned char>(address[i])) << (8 * i);
  return word;
}

WEFT_HOST_DEVICE void storeBytes(char* address, uint64_t word, uint64_t valid) {
  if (valid == 8 && (reinterpret_cast<uintptr_t>(address) & 7) == 0) {
#if defined(__CUDA_ARCH__)
    *reinterpret_cast<uint64_t*>(address) = word;
#else
    std::memcpy(address, &word, sizeof(word));
#endif
    return;
  }
  for (uint64_t i = 0; i < valid; ++i) address[i] = static_cast<char>(word >> (8 * i));
}

/// Moves an LL piece: each thread takes 8-byte words of it, waits for each received line's flags,
/// combines it with the local input as `body` does, and writes the local output and the sent line
/// (flag `sendFlag`). False if the communicator was aborted.
template <class Block, class Body>
WEFT_KERNEL_CODE bool moveLowLatencyPiece(Block& block, const Piece& piece, uint64_t unitBytes, uint32_t receiveFlag,
                                          uint32_t sendFlag, const volatile int* abortFlag, const LineSource& from,
                                          const Body& body) {
  const uint64_t bytes = piece.units * unitBytes;
  const uint64_t words = (bytes + kLowLatencyLineData - 1) / kLowLatencyLineData;
  for (uint64_t w = block.thread(); w < words; w += block.threads()) {
    const uint64_t offset = w * kLowLatencyLineData;
    const uint64_t valid = bytes - offset < kLowLatencyLineData ? bytes - offset : kLowLatencyLineData;
    uint64_t received = 0;
    if (piece.received != nullptr &&
        !readLine(block, piece.received + w * kLowLatencyLineBytes, receiveFlag, abortFlag, &received, from)) {
      return false;
    }
    const uint64_t local = piece.src != nullptr ? loadBytes(piece.src + offset, valid) : 0;
    const uint64_t word = body.combineWord(piece, received, local, valid);
    if (piece.dst != nullptr) storeBytes(piece.dst + offset, word, valid);
    if (piece.slot != nullptr) writeLine(block, piece.slot + w * kLowLatencyLineBytes, word, sendFlag);
  }
  return true;
}

WEFT_HOST_DEVICE char* bufferBase(const KernelLane& lane, uint8_t buffer) {
  return buffer == kSendBuffer ? lane.sendbuff : buffer == kRecvBuffer ? lane.recvbuff : nullptr;
}

/// Thread 0 only: readies piece `round` of step `s` of the lane in `shared` (its step, slots and
/// counters), waiting for them, and says in `shared.action` whether the block moves it.
template <class Block>
WEFT_KERNEL_CODE void preparePiece(Block& block, const KernelWork& work, uint32_t s, uint64_t round,
                                   const core::WaitSite& site) {
  LaneLoopShared& shared = block.template shared<LaneLoopShared>();
  const bool cached = shared.lane.stepCount <= kCachedSteps;
  const bool lowLatency = work.lowLatency != 0;
  shared.step = cached ? shared.laneSteps[s] : work.steps[shared.lane.firstStep + s];
  const KernelStep& step = shared.step;
  shared.action = round * work.pieceUnits >= step.count ? 1 : 0;
  shared.receivedSlot = shared.sendSlot = shared.cleanSlot = nullptr;
  shared.sendPosted = shared.sendSize = shared.recvReleased = nullptr;
  if (shared.action == 0 && step.recvConnection >= 0) {
    const KernelConnection recv = cached ? shared.laneReceives[s] : work.connections[step.recvConnection];
    shared.receivedIndex = block.loadOwn(recv.released);
    const uint64_t slot = shared.receivedIndex % recv.slotCount;
    if (lowLatency) {
      shared.receivedSlot = recv.llSlots + slot * recv.llSlotBytes;  // each line says when it is there
    } else {
      if (!waitCounter(block, recv, recv.posted, 0, shared.receivedIndex + 1, core::BlockActivity::kReceiving,
                       work.abortFlag, site)) {
        shared.action = 2;
      }
      shared.receivedSlot = recv.slots + slot * recv.slotBytes;
    }
    shared.recvReleased = recv.released;
    shared.receivedPeer = recv.peer;
    shared.receivedChannel = recv.channel;
  }
  if (shared.action == 0 && step.sendConnection >= 0) {
    const KernelConnection send = cached ? shared.laneSends[s] : work.connections[step.sendConnection];
    shared.sentIndex = block.loadOwn(send.posted);
    if (!waitCounter(block, send, send.released, send.slotCount, shared.sentIndex + 1, core::BlockActivity::kSending,
                     work.abortFlag, site)) {
      shared.action = 2;
    }
    const uint64_t slot = shared.sentIndex % send.slotCount;
    shared.sendSlot = lowLatency ? send.llSlots + slot * send.llSlotBytes : send.slots + slot * send.slotBytes;
    shared.sendPosted = send.posted;
    if (send.sizes != nullptr) shared.sendSize = send.sizes + slot;
    if (send.llSlots != nullptr && (shared.sentIndex & kLowLatencyCleanMask) == kLowLatencyCleanMask) {
      shared.cleanSlot = send.llSlots + slot * send.llSlotBytes;
      shared.cleanLines = send.llSlotBytes / kLowLatencyLineBytes;
    }
  }
}

/// Runs rounds [from, to) of the lane in `shared.lane` (its steps cached where it has few), which
/// is the block's lane `laneInBlock`, moving each piece's units with `body`. False, on every
/// thread, once an abort is seen.
template <class Block, class Body>
WEFT_KERNEL_CODE bool runRounds(Block& block, const KernelWork& work, const Body& body, uint32_t laneInBlock,
                                uint64_t from, uint64_t to) {
  LaneLoopShared& shared = block.template shared<LaneLoopShared>();
  const uint32_t thread = block.thread();
  const bool lowLatency = work.lowLatency != 0;
  const KernelLane& lane = shared.lane;
  for (uint64_t round = from; round < to; ++round) {
    const uint64_t begin = round * work.pieceUnits;
    for (uint32_t s = 0; s < lane.stepCount; ++s) {
      core::WaitSite site;
      site.lane = laneInBlock;
      site.step = s;
      site.steps = lane.stepCount;
      site.piece = round;
      if (thread == 0) preparePiece(block, work, s, round, site);
      block.sync();
      if (shared.action == 2) return false;
      if (shared.action == 1) {
        block.sync();  // every thread has read `action` before thread 0 writes the next one
        continue;
      }
      const KernelStep& step = shared.step;
      Piece piece;
      piece.received = shared.receivedSlot;
      piece.slot = shared.sendSlot;
      char* src = bufferBase(lane, step.srcBuffer);
      char* dst = bufferBase(lane, step.dstBuffer);
      piece.src = src != nullptr ? src + (step.srcOffset + begin) * work.unitBytes : nullptr;
      piece.dst = dst != nullptr ? dst + (step.dstOffset + begin) * work.unitBytes : nullptr;
      piece.units = step.count - begin < work.pieceUnits ? step.count - begin : work.pieceUnits;
      piece.contribute = step.contribute != 0;
      piece.finalize = step.finalize != 0;
      const uint32_t sendFlag = static_cast<uint32_t>(shared.sentIndex + 1);
      bool abortedInPiece = false;  // this thread's LL wait saw the abort
      if (lowLatency) {
        const LineSource source{site, shared.receivedPeer, shared.receivedChannel};
        const bool moved = moveLowLatencyPiece(block, piece, work.unitBytes,
                                               static_cast<uint32_t>(shared.receivedIndex + 1), sendFlag,
                                               work.abortFlag, source, body);
        abortedInPiece = !moved;
      } else {
        body(piece, thread, block.threads());
      }
      if (shared.cleanSlot != nullptr) {
        // The lines this piece left (all of them for a Simple piece): the slot is free, since the
        // receiver has released the piece before this one in it.
        const uint64_t filled =
            lowLatency ? (piece.units * work.unitBytes + kLowLatencyLineData - 1) / kLowLatencyLineData : 0;
        for (uint64_t line = filled + thread; line < shared.cleanLines; line += block.threads()) {
          writeLine(block, shared.cleanSlot + line * kLowLatencyLineBytes, 0, sendFlag);
        }
      }
      if (block.syncOr(abortedInPiece)) return false;
      if (thread == 0) {
        if (!lowLatency) {
          if (shared.sendSize != nullptr) *shared.sendSize = piece.units * work.unitBytes;
          block.fenceSystem();  // the piece before its count (LL lines carry their own flags)
        }
        if (shared.sendPosted != nullptr) block.storeRelease(shared.sendPosted, shared.sentIndex + 1);
        if (shared.recvReleased != nullptr) block.storeRelease(shared.recvReleased, shared.receivedIndex + 1);
      }
    }
  }
  return true;
}

/// Runs the block's runs of lanes (`work.blocks[blockIndex]`), each as run_walk.h walks it, moving
/// each piece's units with `body`: `body(piece, thread, threads)` for a Simple piece,
/// `body.combineWord(piece, received, local, valid)` for each word of an LL one. Returns early, on
/// every thread, once an abort is seen.
template <class Block, class Body>
WEFT_KERNEL_CODE void runLanes(Block& block, const KernelWork& work, uint32_t blockIndex, const Body& body) {
  LaneLoopShared& shared = block.template shared<LaneLoopShared>();
  const uint32_t thread = block.thread();
  if (thread == 0) shared.kernelBlock = work.blocks[blockIndex];
  block.sync();
  uint32_t blockFirstLane = 0;  // the block's lanes are its runs', one after the other
  for (uint32_t r = 0; r < shared.kernelBlock.runCount; ++r) {
    if (thread == 0) shared.run = work.runs[shared.kernelBlock.firstRun + r];
    block.sync();
    if (r == 0) blockFirstLane = shared.run.firstLane;
    RunWalk walk(shared.run);  // each thread walks it alike
    block.sync();              // every thread has read `run` before thread 0 writes the next one
    while (walk.more()) {
      if (thread == 0) shared.lane = work.lanes[walk.lane()];
      block.sync();
      const KernelLane& lane = shared.lane;
      if (lane.stepCount <= kCachedSteps) {
        for (uint32_t s = thread; s < lane.stepCount; s += block.threads()) {
          const KernelStep mine = work.steps[lane.firstStep + s];
          shared.laneSteps[s] = mine;
          if (mine.recvConnection >= 0) shared.laneReceives[s] = work.connections[mine.recvConnection];
          if (mine.sendConnection >= 0) shared.laneSends[s] = work.connections[mine.sendConnection];
        }
      }
      block.sync();
      uint64_t from = 0, to = 0;
      const uint32_t laneInBlock = walk.lane() - blockFirstLane;
      walk.take(lane.rounds, &from, &to);
      if (!runRounds(block, work, body, laneInBlock, from, to)) return;
      block.sync();  // every thread is done with `lane` and its steps before the next are read
    }
  }
}

}  // namespace weft::device
