#pragma once
// The element arithmetic of the GPU path, bit for bit the host's (algorithms/reduce.h):
// integers wrap (sum, prod, PreMulSum) and the average divides the final sum truncating toward
// zero; float and double do one IEEE operation at a time, rounded to nearest even, never fused;
// half, bfloat16 and fp8 compute each operation in float and round back to the type (fp8
// saturating to its largest finite value); max/min ignore a NaN operand unless both are NaN,
// count +0 above -0, and return one of the two input codes unchanged. One difference: a NaN that a
// sum, product or average makes or passes on is the GPU's canonical NaN, where the host's keeps
// the input's sign and payload (both are NaN; only the bits differ). It compiles as plain C++ too,
// so that a host test compares it with the host's arithmetic on the CPU.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cmath>
#include <cstdint>

#include "algorithms/datatype.h"
#include "src/device/host_device.h"

namespace weft::device {

using algorithms::RedOpKind;

// One IEEE operation rounded to nearest even, never fused into a multiply-add: the GPU's
// intrinsics, and on the CPU (host tests; x86-64 without FMA) the plain operation.
WEFT_HOST_DEVICE float addRn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
WEFT_HOST_DEVICE float mulRn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
WEFT_HOST_DEVICE double addRn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
WEFT_HOST_DEVICE double mulRn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
template <class F>
WEFT_HOST_DEVICE bool negative(F x) {
#if defined(__CUDA_ARCH__)
  return signbit(x) != 0;  // CUDA promises only some nonzero value for a negative
#else
  return std::signbit(x);
#endif
}

// --- integers ------------------------------------------------------------------------------------

template <class T>
struct IntegerMath {
  using Storage = T;
  using Unsigned = std::make_unsigned_t<T>;
  WEFT_HOST_DEVICE static T add(T a, T b) { return static_cast<T>(static_cast<Unsigned>(a) + static_cast<Unsigned>(b)); }
  WEFT_HOST_DEVICE static T mul(T a, T b) {
    // Promote to at least 32 bits unsigned, so that narrow types do not multiply as signed int.
    using Wide = std::conditional_t<(sizeof(T) < 4), uint32_t, Unsigned>;
    return static_cast<T>(static_cast<Wide>(static_cast<Unsigned>(a)) * static_cast<Wide>(static_cast<Unsigned>(b)));
  }
  WEFT_HOST_DEVICE static T max(T a, T b) { return a > b ? a : b; }
  WEFT_HOST_DEVICE static T min(T a, T b) { return a < b ? a : b; }
  WEFT_HOST_DEVICE static T divide(T value, uint64_t divisor) {
    if constexpr (std::is_signed_v<T>) {
      return static_cast<T>(static_cast<int64_t>(value) / static_cast<int64_t>(divisor));
    } else {
      return static_cast<T>(static_cast<uint64_t>(value) / divisor);
    }
  }
};

// --- floating point ------------------------------------------------------------------------------

// Picks max or min among two codes by their values (see the header comment).
template <class Math, bool kMax>
WEFT_HOST_DEVICE typename Math::Storage pickExtreme(typename Math::Storage peer, typename Math::Storage local) {
  const auto p = Math::value(peer);
  const auto l = Math::value(local);
  const bool peerNan = p != p;
  const bool localNan = l != l;
  if (localNan) return peerNan ? local : peer;
  if (peerNan) return local;
  if (p == l) {
    const bool peerNegative = negative(p);
    if (p == 0 && peerNegative != negative(l)) return peerNegative == kMax ? local : peer;
    return local;
  }
  return ((p > l) == kMax) ? peer : local;
}

struct FloatMath {
  using Storage = float;
  WEFT_HOST_DEVICE static float value(float x) { return x; }
  WEFT_HOST_DEVICE static float add(float a, float b) { return addRn(a, b); }
  WEFT_HOST_DEVICE static float mul(float a, float b) { return mulRn(a, b); }
};

struct DoubleMath {
  using Storage = double;
  WEFT_HOST_DEVICE static double value(double x) { return x; }
  WEFT_HOST_DEVICE static double add(double a, double b) { return addRn(a, b); }
  WEFT_HOST_DEVICE static double mul(double a, double b) { return mulRn(a, b); }
};

// Narrow floats: the operation in float (exact for these formats' products and sums of two
// values, or rounded once), then one rounding back to the type.
template <class Codec>
struct NarrowMath {
  using Storage = typename Codec::Storage;
  WEFT_HOST_DEVICE static float value(Storage x) { return Codec::toFloat(x); }
  WEFT_HOST_DEVICE static Storage add(Storage a, Storage b) {
    return Codec::fromFloat(addRn(Codec::toFloat(a), Codec::toFloat(b)));
  }
  WEFT_HOST_DEVICE static Storage mul(Storage a, Storage b) {
    return Codec::fromFloat(mulRn(Codec::toFloat(a), Codec::toFloat(b)));
  }
};

struct HalfCodec {
  using Storage = uint16_t;
  WEFT_HOST_DEVICE static float toFloat(uint16_t x) { return __half2float(__ushort_as_half(x)); }
  WEFT_HOST_DEVICE static uint16_t fromFloat(float x) { return __half_as_ushort(__float2half_rn(x)); }
};

struct Bfloat16Codec {
  using Storage = uint16_t;
  WEFT_HOST_DEVICE static float toFloat(uint16_t x) { return __bfloat162float(__ushort_as_bfloat16(x)); }
  WEFT_HOST_DEVICE static uint16_t fromFloat(float x) { return __bfloat16_as_ushort(__float2bfloat16_rn(x)); }
};

template <__nv_fp8_interpretation_t kFormat>
struct Fp8Codec {
  using Storage = uint8_t;
  WEFT_HOST_DEVICE static float toFloat(uint8_t x) {
    return __half2float(__half(__nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(x), kFormat)));
  }
  WEFT_HOST_DEVICE static uint8_t fromFloat(float x) {
    return static_cast<uint8_t>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, kFormat));
  }
};

// --- one element ---------------------------------------------------------------------------------

template <class Math, RedOpKind kKind>
struct Combine;

template <class Math>
struct Combine<Math, RedOpKind::kSum> {
  WEFT_HOST_DEVICE static typename Math::Storage apply(typename Math::Storage peer, typename Math::Storage local) {
    return Math::add(peer, local);
  }
};
template <class Math>
struct Combine<Math, RedOpKind::kPreMulSum> : Combine<Math, RedOpKind::kSum> {};
template <class Math>
struct Combine<Math, RedOpKind::kProd> {
  WEFT_HOST_DEVICE static typename Math::Storage apply(typename Math::Storage peer, typename Math::Storage local) {
    return Math::mul(peer, local);
  }
};

template <class T, bool kMax>
struct IntegerExtreme {
  WEFT_HOST_DEVICE static T apply(T peer, T local) {
    return kMax ? IntegerMath<T>::max(peer, local) : IntegerMath<T>::min(peer, local);
  }
};

template <class Math>
inline constexpr bool kIsInteger = false;
template <class T>
inline constexpr bool kIsInteger<IntegerMath<T>> = true;

template <class Math>
struct Combine<Math, RedOpKind::kMax> {
  WEFT_HOST_DEVICE static typename Math::Storage apply(typename Math::Storage peer, typename Math::Storage local) {
    if constexpr (kIsInteger<Math>) return IntegerExtreme<typename Math::Storage, true>::apply(peer, local);
    else return pickExtreme<Math, true>(peer, local);
  }
};
template <class Math>
struct Combine<Math, RedOpKind::kMin> {
  WEFT_HOST_DEVICE static typename Math::Storage apply(typename Math::Storage peer, typename Math::Storage local) {
    if constexpr (kIsInteger<Math>) return IntegerExtreme<typename Math::Storage, false>::apply(peer, local);
    else return pickExtreme<Math, false>(peer, local);
  }
};

/// The reduction of one (type, op) pair: v = local scaled (PreMulSum) and, with a peer value,
/// peer ⊕ v; then the integer average's division when finalizing.
template <class Math, RedOpKind kKind>
struct Reducer {
  using Storage = typename Math::Storage;
  Storage scalar;
  uint64_t divisor;

  WEFT_HOST_DEVICE Storage scale(Storage local) const { return scaleBy(local, scalar); }
  /// `local` scaled by a given multiplier (another rank's, in the direct allreduce).
  WEFT_HOST_DEVICE static Storage scaleBy(Storage local, Storage multiplier) {
    if constexpr (kKind == RedOpKind::kPreMulSum) return Math::mul(local, multiplier);
    else return local;
  }
  WEFT_HOST_DEVICE Storage reduce(Storage peer, Storage local) const {
    return Combine<Math, kKind>::apply(peer, scale(local));
  }
  WEFT_HOST_DEVICE Storage finish(Storage value) const {
    if constexpr (kIsInteger<Math>) {
      if (divisor > 1) return Math::divide(value, divisor);
    }
    return value;
  }
};

}  // namespace weft::device
