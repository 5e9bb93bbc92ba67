#pragma once
// What each thread block of a communicator's GPU kernels is doing, for hang reports: the answer to
// "what is this rank's kernel waiting for?". A block writes its record into mapped host memory
// (src/device/block_progress.cuh): thread 0 when the block starts a kernel and when it is done,
// and a thread whose wait has polled kPollsPerAbortCheck times without what it waits for, when no
// other thread of the block has a wait recorded, and again when that wait ends;
// progress_record.h prints the records. A wait that succeeds sooner
// writes nothing, so moving data costs nothing more.
//
// Plain C++: the kernels, the GPU executor and the host's reports share it.

#include <cstddef>
#include <cstdint>

namespace weft::core {

/// Records per communicator: blocks of a kernel from this one on record nothing (a kernel has at
/// most one block per multiprocessor, less spares, halved: residency.h).
inline constexpr size_t kRecordedBlocks = 128;

/// What a block does (GpuBlockProgress::activity).
enum class BlockActivity : uint32_t {
  kNone = 0,       // no kernel of this communicator has run in this block yet
  kRunning = 1,    // in its kernel, not waiting (or no longer)
  kDone = 2,       // done with its kernel, or gave up on an abort
  kReceiving = 3,  // waits for a piece from `peer`: its `posted` counter is `seen`, needs `wanted`
  kSending = 4,    // waits for a free slot towards `peer`: its `released` counter is `seen`, needs `wanted`
  kReceivingLine = 5,  // LL: waits for a line from `peer` to carry flag `wanted` (it holds `seen`;
                       // the first of the block's threads to record its wait)
  kArriving = 6,   // the direct allreduce: waits for rank `peer` to publish call `wanted` (it is at `seen`)
  kFinishing = 7,  // the direct allreduce: waits for rank `peer` to finish call `wanted` (it is at `seen`)
  kAtBarrier = 8,  // the NVLS allreduce: waits for the team's blocks (`seen` arrivals, `wanted` needed)
};

/// Where a wait is in a lane's steps (the lane within the block's, its step, the round).
struct WaitSite {
  uint32_t lane = 0;
  uint32_t step = 0;
  uint32_t steps = 0;
  uint64_t piece = 0;
};

/// One block's record. Fields are written one at a time while the host may read them: a report
/// taken mid-write may mix two moments, never anything else.
struct GpuBlockProgress {
  uint64_t kernel = 0;    // the communicator's kernel (1, 2, ...; a graph's replay: at capture)
  uint32_t activity = 0;  // BlockActivity
  int32_t peer = -1;      // the rank waited for, or -1
  int32_t channel = -1;   // the connection's channel, or -1
  uint32_t lane = 0;      // within the kernel's lanes for this block
  uint32_t step = 0;      // within the lane
  uint32_t steps = 0;
  uint64_t piece = 0;     // the round of the lane's steps
  uint64_t seen = 0;
  uint64_t wanted = 0;
  uint32_t blocks = 0;    // the kernel's blocks (its grid), written as the block starts; 0: not known
  uint32_t reserved = 0;
};

}  // namespace weft::core
