#pragma once
// The direct allreduce (src/device/direct_plan.h) as each rank's kernel runs it, in the step
// kernel of the launch's type and op (src/device/step_kernel.cu):
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

#include "src/device/block_loops.h"
#include "src/device/block_progress.cuh"
#include "src/device/device_reduce.cuh"
#include "src/device/direct_plan.h"
#include "src/device/kernel_work.h"

namespace weft::device {

namespace direct_detail {

__device__ inline unsigned long long loadAcquireGpu(const unsigned long long* address) {
  unsigned long long value;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(value) : "l"(address) : "memory");
  return value;
}

__device__ inline void storeReleaseGpu(unsigned long long* address, unsigned long long value) {
  asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(address), "l"(value) : "memory");
}

// Thread 0 only: waits until every rank's `arrived` (or `finished`) has reached `call`. False if
// the communicator was aborted. A long wait is recorded for hang reports.
__device__ inline bool waitForEveryRank(const KernelDirect& direct, bool finished, unsigned long long call,
                                        const volatile int* abortFlag, const BlockProgressWriter& progress) {
  const core::BlockActivity activity = finished ? core::BlockActivity::kFinishing : core::BlockActivity::kArriving;
  for (int r = 0; r < direct.nranks; ++r) {
    const DirectBoard& board = direct.boards[r];
    const unsigned long long* counter = finished ? &board.finished : &board.arrived;
    RecordedWait wait(progress);
    for (int polls = 0;; ++polls) {
      const unsigned long long reached = loadAcquireGpu(counter);
      if (reached >= call) break;
      if (polls == kPollsPerAbortCheck) {
        if (abortFlag != nullptr && *abortFlag != 0) return false;
        wait.note(activity, r, -1, core::WaitSite{}, reached, call);
        polls = 0;
      }
    }
    wait.end();
  }
  return true;
}

// The part [begin, end) of `units` split evenly over `parts`.
__device__ inline void evenPart(uint64_t units, uint64_t part, uint64_t parts, uint64_t* begin, uint64_t* end) {
  *begin = units / parts * part + min(part, units % parts);
  *end = *begin + units / parts + (part < units % parts ? 1 : 0);
}

}  // namespace direct_detail

// This block's part of the elements: `parts` blocks over all ranks split them evenly. Each
// element of the result is, in rank order, each rank's element scaled by its own multiplier and
// combined into the partial result (divided for the integer average where kDivide): 16-byte words
// up to `tail` (reduceRankWords), then one element at a time.
template <class Math, RedOpKind kKind, bool kDivide>
__device__ __forceinline__ void reducePart(const Reducer<Math, kKind>& reducer, int n, uint64_t count, bool wholeWords,
                                           uint64_t part, uint64_t parts, const typename Math::Storage* const* inputs,
                                           typename Math::Storage* const* outputs,
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
  reduceRankWords(inputs, outputs, n, begin, end, threadIdx.x, blockDim.x, fold, finish);
  direct_detail::evenPart(count - tail, part, parts, &begin, &end);
  for (uint64_t i = tail + begin + threadIdx.x; i < tail + end; i += blockDim.x) {
    Storage x[kMaxDirectRanks];  // every rank's element loaded before any is folded
#pragma unroll
    for (int r = 0; r < kMaxDirectRanks; ++r) x[r] = r < n ? inputs[r][i] : Storage{};
    Storage result{};
#pragma unroll
    for (int r = 0; r < kMaxDirectRanks; ++r) {
      if (r < n) result = fold(result, x[r], r);  // unrolled, so that `x` stays in registers
    }
    result = finish(result);
    for (int r = 0; r < n; ++r) outputs[r][i] = result;
  }
}

/// Runs the launch's direct allreduce (work.direct.boards is set) in this block.
template <class Math, RedOpKind kKind>
__device__ void runDirectAllReduce(const KernelWork& work, const BlockProgressWriter& progress,
                                   const Reducer<Math, kKind>& reducer) {
  using Storage = typename Math::Storage;
  using namespace direct_detail;
  const KernelDirect& direct = work.direct;
  DirectBoard& mine = direct.boards[direct.rank];
  const int n = direct.nranks;

  __shared__ unsigned long long call;
  __shared__ bool proceed;
  __shared__ bool wholeWords;
  __shared__ uint64_t count;
  __shared__ const Storage* inputs[kMaxDirectRanks];
  __shared__ Storage* outputs[kMaxDirectRanks];
  __shared__ Storage multipliers[kMaxDirectRanks];
  if (threadIdx.x == 0) {
    call = *reinterpret_cast<volatile unsigned long long*>(&mine.finished) + 1;
    if (blockIdx.x == 0) {
      mine.sendbuff = direct.sendbuff;
      mine.recvbuff = direct.recvbuff;
      mine.count = direct.count;
      uint64_t scalar = 0;  // the multiplier this rank's kernel uses (read from scalarAt, or given)
      memcpy(&scalar, &reducer.scalar, sizeof(Storage));
      mine.scalar = scalar;
      storeReleaseGpu(&mine.arrived, call);
    }
    proceed = waitForEveryRank(direct, false, call, work.abortFlag, progress);
    uintptr_t alignment = 0;
    count = direct.count;
    for (int r = 0; r < n && proceed; ++r) {
      const DirectBoard& board = direct.boards[r];
      inputs[r] = reinterpret_cast<const Storage*>(board.sendbuff);
      outputs[r] = reinterpret_cast<Storage*>(board.recvbuff);
      const uint64_t scalar = board.scalar;
      memcpy(&multipliers[r], &scalar, sizeof(Storage));
      alignment |= reinterpret_cast<uintptr_t>(board.sendbuff) | reinterpret_cast<uintptr_t>(board.recvbuff);
      count = min(count, static_cast<uint64_t>(board.count));  // no overrun where counts differ
    }
    wholeWords = (alignment & 15) == 0;
  }
  __syncthreads();
  if (!proceed) return;

  const uint64_t part = static_cast<uint64_t>(direct.rank) * direct.blocksPerRank + blockIdx.x;
  const uint64_t parts = static_cast<uint64_t>(n) * direct.blocksPerRank;
  if (kIsInteger<Math> && reducer.divisor > 1) {
    reducePart<Math, kKind, true>(reducer, n, count, wholeWords, part, parts, inputs, outputs, multipliers);
  } else {
    reducePart<Math, kKind, false>(reducer, n, count, wholeWords, part, parts, inputs, outputs, multipliers);
  }

  __syncthreads();
  if (threadIdx.x != 0) return;
  // System scope: an output may be pinned host memory, which its rank's host reads once its own
  // kernel, which waits for this `finished`, has ended. Once per block and call.
  __threadfence_system();  // this block's writes, by every thread, before its count
  if (atomicAdd(&mine.finishedBlocks, 1u) + 1 == static_cast<unsigned>(direct.blocksPerRank)) {
    __threadfence_system();  // every block's writes (each fenced before its count) before `finished`
    mine.finishedBlocks = 0;
    storeReleaseGpu(&mine.finished, call);
  }
  if (blockIdx.x == 0) (void)waitForEveryRank(direct, true, call, work.abortFlag, progress);
}

}  // namespace weft::device
