#pragma once
// What the NVSwitches do for the NVLS allreduce (src/device/nvls_allreduce.h) on the GPU: the
// multimem instructions on a multicast address, as that loop's fabric (DeviceNvlsFabric), and the
// switches' arithmetic for each type and op that nvlsReduces allows (NvlsArithmetic).

#include <cstdint>

#include "src/device/block_loops.h"
#include "src/device/device_reduce.cuh"

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

/// The GPU's fabric for runNvlsAllReduce (src/device/nvls_allreduce.h): the multimem instructions
/// at system scope, with the switches reducing as `Arithmetic` says.
template <class Arithmetic>
struct DeviceNvlsFabric {
  __device__ __forceinline__ Word16 loadReduce(const char* multicast) const {
    const uint4 v = Arithmetic::loadReduce(multicast);
    return Word16{{v.x, v.y, v.z, v.w}};
  }
  __device__ __forceinline__ void storeEverywhere(char* multicast, const Word16& w) const {
    WEFT_NVLS_ASM("multimem.st.relaxed.sys.global.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(multicast), "r"(w.part[0]),
                  "r"(w.part[1]), "r"(w.part[2]), "r"(w.part[3])
                  : "memory");
  }
  __device__ __forceinline__ void arrive(unsigned* multicast) const {
    WEFT_NVLS_ASM("multimem.red.release.sys.global.add.u32 [%0], %1;" ::"l"(multicast), "r"(1u) : "memory");
  }
  __device__ __forceinline__ unsigned loadAcquire(const unsigned* unicast) const {
    unsigned value;
    asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(value) : "l"(unicast) : "memory");
    return value;
  }
  // The unicast and multicast addresses alias the same memory.
  __device__ __forceinline__ void fenceAliases() const { WEFT_NVLS_ASM("fence.proxy.alias;" ::: "memory"); }
  __device__ __forceinline__ Word16 loadFresh(const void* words, uint64_t index) const {
    const uint4 v = __ldcg(static_cast<const uint4*>(words) + index);
    return Word16{{v.x, v.y, v.z, v.w}};
  }
  __device__ __forceinline__ char loadFreshByte(const char* address) const {
    return static_cast<char>(__ldcg(reinterpret_cast<const signed char*>(address)));
  }
};

#undef WEFT_NVLS_ASM

}  // namespace weft::device
