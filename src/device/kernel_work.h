#pragma once
// What one launch of the step kernel runs, in plain structs that the host writes into pinned
// memory and the kernel reads (src/device/lane_loop.h). The layout mirrors the step programs
// (algorithms/step.h): a block runs runs of lanes (KernelRun) in order, a lane runs its steps in
// rounds (piece k of every step, then piece k + 1), a step receives from one connection, combines
// with a local input, writes a local output and sends to one connection.

#include <cstdint>

#include "src/core/gpu_block_progress.h"

namespace weft::device {

/// Polls of a counter or an LL line between two looks at the abort flag (which lives in pinned
/// host memory, slower to read than the polled GPU memory).
inline constexpr int kPollsPerAbortCheck = 1024;

/// An LL slot holds 16-byte lines, each 8 bytes of the piece and two copies of its flag (the
/// piece's index on the connection, plus one, in 32 bits): a line is whole when both flags match,
/// with no fence between data and flag. A slot of llSlotBytes carries llSlotBytes / 2 bytes of a
/// piece.
inline constexpr uint64_t kLowLatencyLineBytes = 16;
inline constexpr uint64_t kLowLatencyLineData = 8;
/// Flags wrap at 2^32, and a line a piece does not fill keeps its old flag: untouched, one could
/// match a piece 2^32 later (or, still zero from setup, index 2^32 - 1's flag 0). So whenever the
/// index of a piece sent (LL or Simple) has these bits all set, which happens to eight consecutive
/// pieces, one per slot, twice in every 2^32, the sender writes its flag into every line of that
/// piece's LL slot that the piece does not fill (as NCCL's LL clean-up does).
inline constexpr uint64_t kLowLatencyCleanMask = 0x7ffffff8;

/// Each table of a launch (blocks, runs, lanes, steps, connections), and each launch's tables among
/// others in one buffer, start at a multiple of kTablesAlign bytes: alignTables(offset) is the
/// first such offset at or after `offset`.
inline constexpr uint64_t kTablesAlign = 16;
inline constexpr uint64_t alignTables(uint64_t offset) {
  return (offset + kTablesAlign - 1) / kTablesAlign * kTablesAlign;
}

/// Where a step's local input or output is. Offsets are in the lane's units (elements of the
/// launch's type, or bytes for a copy launch).
enum : uint8_t { kNoBuffer = 0, kSendBuffer = 1, kRecvBuffer = 2 };

struct KernelStep {
  int32_t recvConnection = -1;  // index into KernelWork::connections, or -1
  int32_t sendConnection = -1;
  uint8_t srcBuffer = kNoBuffer;
  uint8_t dstBuffer = kNoBuffer;
  uint8_t contribute = 0;  // the local input is a reduction operand (see algorithms::Step)
  uint8_t finalize = 0;    // apply the integer average's division
  uint32_t reserved = 0;
  uint64_t srcOffset = 0;
  uint64_t dstOffset = 0;
  uint64_t count = 0;
};

struct KernelLane {
  uint32_t firstStep = 0;
  uint32_t stepCount = 0;
  uint64_t rounds = 0;  // pieces of the lane's longest step
  char* sendbuff = nullptr;
  char* recvbuff = nullptr;
};

/// Lanes that a block runs together: [firstLane, firstLane + streamLanes[0]) are one stream and
/// the streamLanes[1] after them another. The block runs `window` rounds of the first stream, then
/// `window` of the second, then the next `window` of each, until both end (run_walk.h); a stream's
/// rounds are its lanes' in order. Lanes run whole as one stream with a window of UINT64_MAX; a
/// folded distance (block_plan.h) as its sends and its receives, with windows of the slot count.
struct KernelRun {
  uint32_t firstLane = 0;
  uint32_t streamLanes[2] = {0, 0};
  uint32_t reserved = 0;
  uint64_t window = ~uint64_t{0};
};

struct KernelBlock {
  uint32_t firstRun = 0;
  uint32_t runCount = 0;
};

/// One connection end as the kernel uses it (transport::DeviceEnd).
struct KernelConnection {
  char* slots = nullptr;
  unsigned long long* posted = nullptr;
  unsigned long long* released = nullptr;
  unsigned long long* sizes = nullptr;  // the sender writes each post's byte count here, if set
  uint64_t slotBytes = 0;
  uint64_t slotCount = 0;
  char* llSlots = nullptr;  // the LL slots (slotCount of llSlotBytes), or null
  uint64_t llSlotBytes = 0;
  int32_t peer = -1;     // the rank at the other end, for hang reports
  int32_t channel = -1;
};

/// A rank's board for the direct allreduce (src/device/direct_plan.h), in device memory: the
/// communicator's boards are one array, indexed by rank. A rank's kernel writes only its own board
/// and reads every rank's. Each call's number is one more than its rank's `finished`.
struct alignas(128) DirectBoard {
  unsigned long long arrived = 0;   // the latest call whose buffers (below) are published
  unsigned long long finished = 0;  // the latest call whose share of the elements this rank wrote
  unsigned int finishedBlocks = 0;  // blocks of the running call that have written their part
  unsigned int reserved = 0;
  const char* sendbuff = nullptr;
  char* recvbuff = nullptr;
  uint64_t count = 0;   // the rank's count: every rank reduces the least, never past a buffer
  uint64_t scalar = 0;  // the rank's PreMulSum multiplier (KernelWork::scalar)
};

/// A launch that runs the direct allreduce instead of lanes (then blocks, lanes, steps and
/// connections are unused).
struct KernelDirect {
  DirectBoard* boards = nullptr;  // null: run the lanes
  const char* sendbuff = nullptr;
  char* recvbuff = nullptr;
  uint64_t count = 0;  // elements
  int32_t nranks = 0;
  int32_t rank = 0;
  int32_t blocksPerRank = 0;  // the launch's blocks, the same on every rank
};

/// A launch that runs the NVLS allreduce (src/device/nvls_plan.h) instead of lanes.
struct KernelNvls {
  char* unicast = nullptr;  // the rank's memory bound to the multicast object; null: not NVLS
  char* multicast = nullptr;
  const char* sendbuff = nullptr;
  char* recvbuff = nullptr;
  uint64_t bytes = 0;
  int32_t nranks = 0;
  int32_t rank = 0;
  int32_t blocks = 0;  // the launch's blocks (nvlsLaunchBlocks), the same on every rank
};

struct KernelWork {
  const KernelBlock* blocks = nullptr;
  const KernelRun* runs = nullptr;
  const KernelLane* lanes = nullptr;
  const KernelStep* steps = nullptr;
  const KernelConnection* connections = nullptr;
  uint64_t unitBytes = 1;       // bytes per unit: the element size, or 1 for a copy launch
  uint64_t pieceUnits = 0;      // units per piece: the slot's payload in units
  uint32_t lowLatency = 0;      // 1: pieces go through the LL slots (see kLowLatencyLineBytes)
  uint32_t reserved = 0;
  uint64_t scalar = 0;          // PreMulSum's multiplier in the type's encoding (low bytes)
  uint64_t divisor = 1;         // integer average: the final sum's divisor
  const volatile int* abortFlag = nullptr;  // set by ncclCommAbort: every wait gives up
  const void* scalarAt = nullptr;  // where PreMulSum's multiplier is read as the kernel runs, else `scalar`
  KernelDirect direct;
  KernelNvls nvls;
  /// Where each block records what it does, for hang reports (core::kRecordedBlocks records; null:
  /// nowhere), and this kernel's number on its communicator.
  core::GpuBlockProgress* blockProgress = nullptr;
  uint64_t kernel = 0;
};

// The sizes WorkPool::kReservedBytes is reckoned in, and the boards' own cache lines.
static_assert(sizeof(KernelStep) == 40 && sizeof(KernelConnection) == 72,
              "comm_device.h reckons WorkPool::kReservedBytes in these sizes");
static_assert(alignof(DirectBoard) == 128 && sizeof(DirectBoard) == 128, "each rank's board is one 128-byte line");

}  // namespace weft::device
