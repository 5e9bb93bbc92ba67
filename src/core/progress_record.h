#pragma once
// What each communicator of this process is doing, kept where a signal handler can read it: the
// answer to "what is this rank waiting for?" when a job hangs.
//
// Records live in a fixed pool that is never freed, so a handler that runs while a communicator is
// being destroyed reads a stale record, never freed memory. Every field is a relaxed atomic; the
// executor writes them only when a call starts, ends, or stops making progress, so the hot path
// pays nothing.

#include <atomic>
#include <cstdint>
#include <string>

#include "src/core/gpu_block_progress.h"

namespace weft::core {

/// kLaunched: the call's kernel was enqueued on its GPU stream (a rank whose last launch is behind
/// its peers' shows which call it never made); its blocks' own progress is in GpuBlockProgress
/// records (formatGpuBlocks).
enum class ProgressState : int { kIdle = 0, kRunning = 1, kWaiting = 2, kLaunched = 3 };
enum class WaitDirection : int {
  kNone = 0,     // no connection in particular (its sends are being delivered)
  kReceive = 1,  // data from `peer`
  kSend = 2,     // a free slot towards `peer`
  kQueued = 3,   // an earlier operation that uses the same connection
};

struct ProgressRecord {
  std::atomic<bool> inUse{false};
  std::atomic<uint64_t> commHash{0};
  std::atomic<int> rank{0};
  std::atomic<int> nranks{0};
  std::atomic<int> state{0};       // ProgressState
  std::atomic<int> collective{0};  // algorithms::Collective of the current (or last) operation
  std::atomic<int> type{0};        // algorithms::DataType
  std::atomic<uint64_t> sequence{0};  // operations started on this communicator, this one included
  std::atomic<uint64_t> count{0};
  std::atomic<int> channel{0};
  std::atomic<int> step{0};
  std::atomic<int> steps{0};
  std::atomic<uint64_t> piece{0};
  std::atomic<int> peer{-1};
  std::atomic<int> direction{0};  // WaitDirection
  // The GPU path: the communicator's latest kernel enqueued (not captured), its blocks, and the
  // kRecordedBlocks records its blocks write (host memory that is never freed, so a handler may
  // read them while the communicator goes away; null where it has none).
  std::atomic<uint64_t> kernel{0};
  std::atomic<int> kernelBlocks{0};
  std::atomic<const GpuBlockProgress*> blocks{nullptr};
};

/// Stores a call's state, collective, type, element count and sequence number in `record`.
void recordCall(ProgressRecord* record, ProgressState state, int collective, int type, uint64_t count,
                uint64_t sequence);

/// Where the communicator's GPU blocks record what they do (kRecordedBlocks records), or nowhere
/// (null).
void attachGpuBlocks(ProgressRecord* record, const GpuBlockProgress* blocks);
/// The communicator's latest GPU kernel, just enqueued: its number and its blocks.
void recordKernel(ProgressRecord* record, uint64_t kernel, int blocks);

/// Takes a free record of the pool for a communicator. Null when the pool is exhausted (thousands
/// of live communicators): the communicator then works without hang reports.
ProgressRecord* acquireProgressRecord(uint64_t commHash, int rank, int nranks);
/// Returns a record to the pool. Null is ignored.
void releaseProgressRecord(ProgressRecord* record);

/// "rank 1/4 comm 0x5f2c...: AllReduce #17 (1048576 x float), channel 0 step 3/6 piece 12: waiting
/// to receive from rank 0". Async-signal-safe: writes into `buffer` (always NUL-terminated) and
/// returns the length.
size_t formatProgress(const ProgressRecord& record, char* buffer, size_t capacity);
std::string describeProgress(const ProgressRecord& record);

/// The communicator's latest GPU kernel, where its blocks' records are attached: "GPU kernel 7, 4
/// blocks: 2 done, 1 waiting, 0 running, 1 not started", then a line per block that is not done
/// with it ("GPU block 2 of kernel 7: lane 0 step 2/3 piece 0: waiting to receive from rank 1 on
/// channel 0 (posted 1, needs 2)", or "GPU block 3: not in kernel 7 yet (last: kernel 6, done)";
/// a replayed graph's kernels carry their numbers at capture). Lines end with '\n'; nothing where
/// no kernel was launched. Async-signal-safe: writes into `buffer` (always NUL-terminated; lines
/// past its end are cut) and returns the length.
size_t formatGpuBlocks(const ProgressRecord& record, char* buffer, size_t capacity);
std::string describeGpuBlocks(const ProgressRecord& record);
/// Whether a block of the communicator's latest GPU kernel is not done with it, as its record says.
bool gpuBlocksUnfinished(const ProgressRecord& record);

/// A block's record as read now, field by field (its GPU may be writing it).
GpuBlockProgress readGpuBlock(const GpuBlockProgress& record);
/// Whether a block with this activity is in one of its waits (receiving, sending, arriving...).
bool isGpuWait(BlockActivity activity);
/// The first of the kRecordedBlocks records `blocks` that is in a wait, as the hang report words
/// it: "GPU block 1 of kernel 7: lane 1 step 3/5 piece 9: waiting to receive from rank 1 on channel
/// 0 (posted 4, needs 5)"; empty where none waits.
std::string describeFirstGpuWait(const GpuBlockProgress* blocks);

/// Writes one line per live communicator of this process to `fd`, followed by formatGpuBlocks'
/// lines where its last call was launched on the GPU. Async-signal-safe.
void dumpProgress(int fd);

/// Installs the handler of WEFT_DUMP_SIGNAL (USR1, USR2, or a number; unset: none) the first time
/// it is called with the knob set: the handler dumps every communicator's progress to stderr and
/// then calls the handler that was installed before it, if any.
void installDumpSignalHandler();

}  // namespace weft::core
