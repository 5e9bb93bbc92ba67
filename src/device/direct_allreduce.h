#pragma once
// The direct allreduce (src/device/direct_plan.h) as each rank's kernel runs it, in the step
// kernel of the launch's type and op (src/device/step_kernel.cu). Written for any block type
// (src/device/kernel_block.h): unit tests run it on host threads too
// (tests/unit/direct_allreduce_test.cc).
//
//   1. block 0 publishes the rank's buffers and count on its board and marks it arrived at this
//      call; every block waits until every rank has arrived, and reads their buffers (and takes
//      the least count: NCCL leaves differing counts undefined, but no buffer is overrun);
//   2. the n ranks' blocks split the elements evenly: a block reads its elements of every input,
//      reduces them in rank order (each input scaled by its own rank's PreMulSum multiplier) and
//      writes the result into every output, 16-byte words where every buffer allows
//      (src/device/block_loops.h);
//   3. the last of a rank's blocks to finish marks the rank finished at this call; block 0 waits
//      until every rank has finished, so that the rank's later work on its stream sees its output
//      whole and may overwrite its input.
//
// A call's number is its rank's `finished` plus one, read on the device, so a captured CUDA graph
// counts its replays too. A rank cannot publish call k + 1 before every rank finished call k, so
// the buffers a block reads are those of its own call. Every wait polls ncclCommAbort's flag.

#include <cstdint>
#include <cstring>

#include "src/device/block_loops.h"
#include "src/device/device_reduce.cuh"
#include "src/device/direct_plan.h"
#include "src/device/host_device.h"
#include "src/device/kernel_block.h"
#include "src/device/kernel_work.h"

namespace weft::device {

namespace direct_detail {

// Thread 0 only: waits until every rank's `arrived` (or `finished`) has reached `call`. False if
// the communicator was aborted. A long wait is recorded for hang reports.
template <class Block>
WEFT_KERNEL_CODE bool waitForEveryRank(Block& block, const KernelDirect& direct, bool finished,
                                       unsigned long long call, const volatile int* abortFlag) {
  const core::BlockActivity activity = finished ? core::BlockActivity::kFinishing : core::BlockActivity::kArriving;
  for (int r = 0; r < direct.nranks; ++r) {
    const DirectBoard& board = direct.boards[r];
    const unsigned long long* counter = finished ? &board.finished : &board.arrived;
    typename Block::Wait wait(block);
    for (int polls = 0;; ++polls) {
      const unsigned long long reached = block.loadAcquireGpu(counter);
      if (reached >= call) break;
      if (polls == kPollsPerAbortCheck) {
        if (block.aborted(abortFlag)) return false;
        wait.note(activity, r, -1, core::WaitSite{}, reached, call);
        polls = 0;
      }
    }
    wait.end();
  }
  return true;
}

// The part [begin, end) of `units` split evenly over `parts`.
WEFT_HOST_DEVICE void evenPart(uint64_t units, uint64_t part, uint64_t parts, uint64_t* begin, uint64_t* end) {
  const uint64_t longer = units % parts;  // parts that hold one more unit: the first ones
  *begin = units / parts * part + (part < longer ? part : longer);
  *end = *begin + units / parts + (part < longer ? 1 : 0);
}

// What thread 0 reads for the block: the call, and every rank's buffers, count and multiplier.
template <class Storage>
struct DirectShared {
  unsigned long long call;
  bool proceed;
  bool wholeWords;
  uint64_t count;
  const Storage* inputs[kMaxDirectRanks];
  Storage* outputs[kMaxDirectRanks];
  Storage multipliers[kMaxDirectRanks];
};

}  // namespace direct_detail

// This block's part of the elements: `parts` blocks over all ranks split them evenly. Each
// element of the result is, in rank order, each rank's element scaled by its own multiplier and
// combined into the partial result (divided for the integer average where kDivide): 16-byte words
// up to `tail` (reduceRankWords), then one element at a time.
template <class Math, RedOpKind kKind, bool kDivide>
WEFT_HOST_DEVICE void reducePart(const Reducer<Math, kKind>& reducer, int n, uint64_t count, bool wholeWords,
                                 uint64_t part, uint64_t parts, uint32_t thread, uint32_t threads,
                                 const typename Math::Storage* const* inputs, typename Math::Storage* const* outputs,
                                 const typename Math::Storage* multipliers) {
  using Storage = typename Math::Storage;
  using R = Reducer<Math, kKind>;
  const auto fold = [&](Storage partial, Storage x, int r) {
    const Storage scaled = R::scaleBy(x, multipliers[r]);
    return r == 0 ? scaled : Combine<Math, kKind>::apply(partial, scaled);
  };
  const auto finish = [&](Storage value) {
    if constexpr (kDivide) return reducer.finish(value);
    else return value;
  };
  constexpr uint64_t kWordElements = sizeof(Word16) / sizeof(Storage);
  const uint64_t words = wholeWords ? count / kWordElements : 0;
  const uint64_t tail = words * kWordElements;
  uint64_t begin = 0;
  uint64_t end = 0;
  direct_detail::evenPart(words, part, parts, &begin, &end);
  reduceRankWords(inputs, outputs, n, begin, end, thread, threads, fold, finish);
  direct_detail::evenPart(count - tail, part, parts, &begin, &end);
  for (uint64_t i = tail + begin + thread; i < tail + end; i += threads) {
    Storage x[kMaxDirectRanks];  // every rank's element loaded before any is folded
    WEFT_UNROLL
    for (int r = 0; r < kMaxDirectRanks; ++r) x[r] = r < n ? inputs[r][i] : Storage{};
    Storage result{};
    WEFT_UNROLL
    for (int r = 0; r < kMaxDirectRanks; ++r) {
      if (r < n) result = fold(result, x[r], r);  // unrolled, so that `x` stays in registers
    }
    result = finish(result);
    for (int r = 0; r < n; ++r) outputs[r][i] = result;
  }
}

/// Runs the launch's direct allreduce (work.direct.boards is set) in block `blockIndex`.
template <class Block, class Math, RedOpKind kKind>
WEFT_KERNEL_CODE void runDirectAllReduce(Block& block, const KernelWork& work, uint32_t blockIndex,
                                         const Reducer<Math, kKind>& reducer) {
  using Storage = typename Math::Storage;
  using namespace direct_detail;
  const KernelDirect& direct = work.direct;
  DirectBoard& mine = direct.boards[direct.rank];
  const int n = direct.nranks;
  DirectShared<Storage>& shared = block.template shared<DirectShared<Storage>>();
  if (block.thread() == 0) {
    shared.call = block.loadOwn(&mine.finished) + 1;
    if (blockIndex == 0) {
      mine.sendbuff = direct.sendbuff;
      mine.recvbuff = direct.recvbuff;
      mine.count = direct.count;
      uint64_t scalar = 0;  // the multiplier this rank's kernel uses (read from scalarAt, or given)
      memcpy(&scalar, &reducer.scalar, sizeof(Storage));
      mine.scalar = scalar;
      block.storeReleaseGpu(&mine.arrived, shared.call);
    }
    shared.proceed = waitForEveryRank(block, direct, false, shared.call, work.abortFlag);
    uintptr_t alignment = 0;
    shared.count = direct.count;
    for (int r = 0; r < n && shared.proceed; ++r) {
      const DirectBoard& board = direct.boards[r];
      shared.inputs[r] = reinterpret_cast<const Storage*>(board.sendbuff);
      shared.outputs[r] = reinterpret_cast<Storage*>(board.recvbuff);
      const uint64_t scalar = board.scalar;
      memcpy(&shared.multipliers[r], &scalar, sizeof(Storage));
      alignment |= reinterpret_cast<uintptr_t>(board.sendbuff) | reinterpret_cast<uintptr_t>(board.recvbuff);
      if (board.count < shared.count) shared.count = board.count;  // no overrun where counts differ
    }
    shared.wholeWords = (alignment & 15) == 0;
  }
  block.sync();
  if (!shared.proceed) return;

  const uint64_t part = static_cast<uint64_t>(direct.rank) * direct.blocksPerRank + blockIndex;
  const uint64_t parts = static_cast<uint64_t>(n) * direct.blocksPerRank;
  if (kIsInteger<Math> && reducer.divisor > 1) {
    reducePart<Math, kKind, true>(reducer, n, shared.count, shared.wholeWords, part, parts, block.thread(),
                                  block.threads(), shared.inputs, shared.outputs, shared.multipliers);
  } else {
    reducePart<Math, kKind, false>(reducer, n, shared.count, shared.wholeWords, part, parts, block.thread(),
                                   block.threads(), shared.inputs, shared.outputs, shared.multipliers);
  }

  block.sync();
  if (block.thread() != 0) return;
  // System scope: an output may be pinned host memory, which its rank's host reads once its own
  // kernel, which waits for this `finished`, has ended. Once per block and call.
  block.fenceSystem();  // this block's writes, by every thread, before its count
  if (block.fetchAdd(&mine.finishedBlocks, 1u) + 1 == static_cast<unsigned>(direct.blocksPerRank)) {
    block.fenceSystem();  // every block's writes (each fenced before its count) before `finished`
    mine.finishedBlocks = 0;
    block.storeReleaseGpu(&mine.finished, shared.call);
  }
  if (blockIndex == 0) (void)waitForEveryRank(block, direct, true, shared.call, work.abortFlag);
}

}  // namespace weft::device
