#pragma once
// The NVLS allreduce (src/device/nvls_plan.h) as each rank's kernel runs it, in the step kernel
// of the launch's type and op (src/device/step_kernel.cu), for the types and ops the switches
// reduce (nvlsReduces). Block b of every rank moves the same pieces (nvlsPiece), in rounds; per
// piece:
//
//   1. copy the piece of the input into the block's area of this rank's bound memory;
//   2. barrier: every rank's block b has copied its piece;
//   3. for this rank's n-th of the piece's 16-byte words: load them reduced across every rank's
//      area (multimem.ld_reduce on the multicast address) and store the result into every area
//      (multimem.st);
//   4. barrier: every rank's share is stored everywhere;
//   5. copy the piece out of the area into the output.
//
// The barrier of block b is a counter in every rank's memory: each rank's arrival adds one to it
// in all of them at once (multimem.red, release), and a rank waits until its own copy has grown
// by n since its last barrier (acquire), polling ncclCommAbort's flag. The barriers passed are
// kept in the rank's memory beside it, so a later launch, or a CUDA graph's replay, goes on from
// there. A rank cannot start piece k + 1 of block b before every rank has left step 3 of piece k.

#include <cstdint>

#include "src/device/block_progress.cuh"
#include "src/device/device_reduce.cuh"
#include "src/device/kernel_work.h"
#include "src/device/nvls_plan.h"

namespace weft::device {

/// The switches' arithmetic on 16 bytes of a type for one op: kSupported where nvlsReduces says
/// so, with loadReduce(address) returning the 16 bytes at the multicast address reduced across
/// every rank's memory.
template <class Math, RedOpKind kKind>
struct NvlsArithmetic {
  static constexpr bool kSupported = false;
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define WEFT_NVLS_ASM(...) __trap()  // multimem needs sm_90; the build targets sm_90 and later
#else
#define WEFT_NVLS_ASM(...) asm volatile(__VA_ARGS__)
#endif

// Four 32-bit registers from one vector instruction (floats: .v4.f32, .v4.f16x2, .v4.bf16x2).
#define WEFT_NVLS_VECTOR(name, instruction)                                                                   \
  __device__ __forceinline__ uint4 name(const char* address) {                                              \
    uint4 v;                                                                                                \
    WEFT_NVLS_ASM(instruction " {%0, %1, %2, %3}, [%4];"                                                    \
                  : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)                                             \
                  : "l"(address)                                                                           \
                  : "memory");                                                                             \
    return v;                                                                                               \
  }
// Four 32-bit words, one instruction each (integers take no vector form).
#define WEFT_NVLS_WORDS32(name, instruction)                                                                  \
  __device__ __forceinline__ uint4 name(const char* address) {                                              \
    uint32_t w[4];                                                                                          \
    _Pragma("unroll") for (int i = 0; i < 4; ++i) {                                                         \
      WEFT_NVLS_ASM(instruction " %0, [%1];" : "=r"(w[i]) : "l"(address + 4 * i) : "memory");              \
    }                                                                                                       \
    return make_uint4(w[0], w[1], w[2], w[3]);                                                              \
  }
// Two 64-bit words, one instruction each (64-bit integers and double).
#define WEFT_NVLS_WORDS64(name, instruction)                                                                  \
  __device__ __forceinline__ uint4 name(const char* address) {                                              \
    unsigned long long w[2];                                                                                \
    _Pragma("unroll") for (int i = 0; i < 2; ++i) {                                                         \
      WEFT_NVLS_ASM(instruction " %0, [%1];" : "=l"(w[i]) : "l"(address + 8 * i) : "memory");              \
    }                                                                                                       \
    return make_uint4(static_cast<uint32_t>(w[0]), static_cast<uint32_t>(w[0] >> 32),                       \
                      static_cast<uint32_t>(w[1]), static_cast<uint32_t>(w[1] >> 32));                      \
  }

namespace nvls_detail {
#define WEFT_LD_REDUCE "multimem.ld_reduce.relaxed.sys.global."
WEFT_NVLS_VECTOR(sumFloat, WEFT_LD_REDUCE "add.v4.f32")
WEFT_NVLS_WORDS64(sumDouble, WEFT_LD_REDUCE "add.f64")
WEFT_NVLS_VECTOR(sumHalf, WEFT_LD_REDUCE "add.acc::f32.v4.f16x2")
WEFT_NVLS_VECTOR(minHalf, WEFT_LD_REDUCE "min.v4.f16x2")
WEFT_NVLS_VECTOR(maxHalf, WEFT_LD_REDUCE "max.v4.f16x2")
WEFT_NVLS_VECTOR(sumBfloat16, WEFT_LD_REDUCE "add.acc::f32.v4.bf16x2")
WEFT_NVLS_VECTOR(minBfloat16, WEFT_LD_REDUCE "min.v4.bf16x2")
WEFT_NVLS_VECTOR(maxBfloat16, WEFT_LD_REDUCE "max.v4.bf16x2")
WEFT_NVLS_WORDS32(sum32, WEFT_LD_REDUCE "add.u32")  // two's complement: signed sums alike
WEFT_NVLS_WORDS32(minS32, WEFT_LD_REDUCE "min.s32")
WEFT_NVLS_WORDS32(maxS32, WEFT_LD_REDUCE "max.s32")
WEFT_NVLS_WORDS32(minU32, WEFT_LD_REDUCE "min.u32")
WEFT_NVLS_WORDS32(maxU32, WEFT_LD_REDUCE "max.u32")
WEFT_NVLS_WORDS64(sum64, WEFT_LD_REDUCE "add.u64")  // multimem has no add.s64; the bits are the same
WEFT_NVLS_WORDS64(minS64, WEFT_LD_REDUCE "min.s64")
WEFT_NVLS_WORDS64(maxS64, WEFT_LD_REDUCE "max.s64")
WEFT_NVLS_WORDS64(minU64, WEFT_LD_REDUCE "min.u64")
WEFT_NVLS_WORDS64(maxU64, WEFT_LD_REDUCE "max.u64")
#undef WEFT_LD_REDUCE
}  // namespace nvls_detail

#define WEFT_NVLS_ARITHMETIC(math, kind, function)                             \
  template <>                                                                  \
  struct NvlsArithmetic<math, RedOpKind::kind> {                               \
    static constexpr bool kSupported = true;                                   \
    __device__ static uint4 loadReduce(const char* address) { return nvls_detail::function(address); } \
  };
WEFT_NVLS_ARITHMETIC(FloatMath, kSum, sumFloat)
WEFT_NVLS_ARITHMETIC(DoubleMath, kSum, sumDouble)
WEFT_NVLS_ARITHMETIC(NarrowMath<HalfCodec>, kSum, sumHalf)
WEFT_NVLS_ARITHMETIC(NarrowMath<HalfCodec>, kMin, minHalf)
WEFT_NVLS_ARITHMETIC(NarrowMath<HalfCodec>, kMax, maxHalf)
WEFT_NVLS_ARITHMETIC(NarrowMath<Bfloat16Codec>, kSum, sumBfloat16)
WEFT_NVLS_ARITHMETIC(NarrowMath<Bfloat16Codec>, kMin, minBfloat16)
WEFT_NVLS_ARITHMETIC(NarrowMath<Bfloat16Codec>, kMax, maxBfloat16)
WEFT_NVLS_ARITHMETIC(IntegerMath<int32_t>, kSum, sum32)
WEFT_NVLS_ARITHMETIC(IntegerMath<int32_t>, kMin, minS32)
WEFT_NVLS_ARITHMETIC(IntegerMath<int32_t>, kMax, maxS32)
WEFT_NVLS_ARITHMETIC(IntegerMath<uint32_t>, kSum, sum32)
WEFT_NVLS_ARITHMETIC(IntegerMath<uint32_t>, kMin, minU32)
WEFT_NVLS_ARITHMETIC(IntegerMath<uint32_t>, kMax, maxU32)
WEFT_NVLS_ARITHMETIC(IntegerMath<int64_t>, kSum, sum64)
WEFT_NVLS_ARITHMETIC(IntegerMath<int64_t>, kMin, minS64)
WEFT_NVLS_ARITHMETIC(IntegerMath<int64_t>, kMax, maxS64)
WEFT_NVLS_ARITHMETIC(IntegerMath<uint64_t>, kSum, sum64)
WEFT_NVLS_ARITHMETIC(IntegerMath<uint64_t>, kMin, minU64)
WEFT_NVLS_ARITHMETIC(IntegerMath<uint64_t>, kMax, maxU64)
#undef WEFT_NVLS_ARITHMETIC
#undef WEFT_NVLS_WORDS64
#undef WEFT_NVLS_WORDS32
#undef WEFT_NVLS_VECTOR

namespace nvls_detail {

// Stores 16 bytes at the multicast address: into every rank's memory.
__device__ __forceinline__ void storeEverywhere(char* address, uint4 v) {
  WEFT_NVLS_ASM("multimem.st.relaxed.sys.global.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(address), "r"(v.x), "r"(v.y),
                "r"(v.z), "r"(v.w)
                : "memory");
}

// Orders this thread's accesses through one address of memory before those through its other
// (the unicast and multicast addresses alias the same memory).
__device__ __forceinline__ void fenceAliases() { WEFT_NVLS_ASM("fence.proxy.alias;" ::: "memory"); }

// The whole block: waits until block `block` of every rank has arrived here. False if the
// communicator was aborted.
__device__ inline bool barrier(const KernelNvls& nvls, int block, const volatile int* abortFlag,
                               const BlockProgressWriter& progress) {
  __shared__ bool proceed;
  fenceAliases();
  __syncthreads();
  if (threadIdx.x == 0) {
    const size_t line = static_cast<size_t>(block) * kNvlsControlLineBytes;
    const unsigned int* arrived = reinterpret_cast<const unsigned int*>(nvls.unicast + line);
    unsigned int* passed =
        reinterpret_cast<unsigned int*>(nvls.unicast + kMaxNvlsBlocks * kNvlsControlLineBytes + line);
    const unsigned int target = *passed + static_cast<unsigned int>(nvls.nranks);
    WEFT_NVLS_ASM("multimem.red.release.sys.global.add.u32 [%0], %1;" ::"l"(nvls.multicast + line), "r"(1u) : "memory");
    fenceAliases();  // the add went through the multicast address; the polls read the unicast one
    proceed = true;
    RecordedWait wait(progress);
    for (int polls = 0;; ++polls) {
      unsigned int now;
      asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(now) : "l"(arrived) : "memory");
      if (static_cast<int>(now - target) >= 0) break;  // wraps safely: no rank is 2^31 barriers ahead
      if (polls == kPollsPerAbortCheck) {
        if (abortFlag != nullptr && *abortFlag != 0) {
          proceed = false;
          break;
        }
        wait.note(core::BlockActivity::kAtBarrier, -1, -1, core::WaitSite{}, now, target);
        polls = 0;
      }
    }
    if (proceed) wait.end();
    *passed = target;
  }
  __syncthreads();
  fenceAliases();
  return proceed;
}

// The block copies `bytes` from `from` to `to`, 16 bytes at a time where both allow. Reads of the
// area bypass L1 (`fresh`): other GPUs wrote it since this SM last read it.
__device__ inline void copyBytes(char* to, const char* from, uint64_t bytes, bool fresh) {
  uint64_t done = 0;
  if (((reinterpret_cast<uintptr_t>(to) | reinterpret_cast<uintptr_t>(from)) & 15) == 0) {
    const uint64_t words = bytes / 16;
    const uint4* from16 = reinterpret_cast<const uint4*>(from);
    uint4* to16 = reinterpret_cast<uint4*>(to);
    for (uint64_t w = threadIdx.x; w < words; w += blockDim.x) to16[w] = fresh ? __ldcg(from16 + w) : from16[w];
    done = words * 16;
  }
  for (uint64_t i = done + threadIdx.x; i < bytes; i += blockDim.x) {
    to[i] = fresh ? static_cast<char>(__ldcg(reinterpret_cast<const signed char*>(from + i))) : from[i];
  }
}

}  // namespace nvls_detail

/// Runs the launch's NVLS allreduce (work.nvls.unicast is set) in this block.
template <class Arithmetic>
__device__ void runNvlsAllReduce(const KernelWork& work, const BlockProgressWriter& progress) {
  using namespace nvls_detail;
  const KernelNvls& nvls = work.nvls;
  const int block = static_cast<int>(blockIdx.x);
  char* area = nvls.unicast + nvlsAreaOffset(block);
  char* everyArea = nvls.multicast + nvlsAreaOffset(block);
  const uint64_t pieceBytes = nvlsPieceBytes(nvls.bytes, nvls.blocks);
  const uint64_t rounds = nvlsRounds(nvls.bytes, pieceBytes, nvls.blocks, block);
  for (uint64_t round = 0; round < rounds; ++round) {
    const NvlsPiece piece = nvlsPiece(nvls.bytes, pieceBytes, nvls.blocks, block, round);
    const uint64_t bytes = piece.end - piece.begin;
    copyBytes(area, nvls.sendbuff + piece.begin, bytes, false);
    if (!barrier(nvls, block, work.abortFlag, progress)) return;
    const algorithms::ElementRange words = nvlsRankWords(bytes, nvls.rank, nvls.nranks);
    for (uint64_t w = words.offset + threadIdx.x; w < words.offset + words.count; w += blockDim.x) {
      storeEverywhere(everyArea + 16 * w, Arithmetic::loadReduce(everyArea + 16 * w));
    }
    if (!barrier(nvls, block, work.abortFlag, progress)) return;
    copyBytes(nvls.recvbuff + piece.begin, area, bytes, true);
    __syncthreads();  // every thread has read the area before any refills it
  }
}

#undef WEFT_NVLS_ASM

}  // namespace weft::device
