#pragma once
// Conversions between float and the narrow formats, written over Lanes without branches so that
// one definition is both the scalar conversion (float_convert.h) and the vector one (the kernels).
// Codes travel in 32-bit lanes (the format's bits in the low bits) so that masks from float
// comparisons and the codes have the same lane width.
//
// Rules (the ones float_convert.h states): float -> narrow rounds to nearest, ties to even,
// subnormals included; half and bfloat16 overflow to infinity; both fp8 formats saturate every
// value beyond their largest finite one, infinity included, to that value. A NaN keeps its sign and
// the leading bits of its payload; if those bits are all zero, the quiet bit is set (e4m3 has a
// single NaN code per sign). Narrow -> float is exact.

#include <bit>
#include <cstdint>

#include "algorithms/reduce_lanes.h"

namespace weft::algorithms {

template <int N>
using CodeLanes = Lanes<uint32_t, N>;
template <int N>
using RealLanes = Lanes<float, N>;

inline constexpr uint32_t kFloatMagnitudeMask = 0x7FFFFFFFu;
inline constexpr uint32_t kFloatInfinityBits = 0x7F800000u;

/// Comparisons of magnitudes (below 2^31) done as signed: x86 has signed vector compares only
/// before AVX-512, and the unsigned ones would cost extra instructions.
template <int N>
[[gnu::always_inline]] inline auto isBelow(const CodeLanes<N>& magnitude, uint32_t bound) {
  return std::bit_cast<Lanes<int32_t, N>>(magnitude) < static_cast<int32_t>(bound);
}
template <int N>
[[gnu::always_inline]] inline auto isAtLeast(const CodeLanes<N>& magnitude, uint32_t bound) {
  return std::bit_cast<Lanes<int32_t, N>>(magnitude) >= static_cast<int32_t>(bound);
}
template <int N>
[[gnu::always_inline]] inline auto isAbove(const CodeLanes<N>& magnitude, uint32_t bound) {
  return std::bit_cast<Lanes<int32_t, N>>(magnitude) > static_cast<int32_t>(bound);
}

/// Rounds a finite magnitude (float bits, sign clear) below the format's overflow threshold to the
/// code of a format with `kMantissaBits` mantissa bits and exponent bias `kBias`.
template <int kMantissaBits, int kBias, int N>
[[gnu::always_inline]] inline CodeLanes<N> roundMagnitude(const CodeLanes<N>& magnitude) {
  using Codes = CodeLanes<N>;
  using Reals = RealLanes<N>;
  constexpr uint32_t kDroppedBits = 23 - kMantissaBits;
  constexpr uint32_t kRebias = static_cast<uint32_t>(127 - kBias) << 23;
  constexpr uint32_t kMinNormalBits = static_cast<uint32_t>(127 - kBias + 1) << 23;
  // Normal results: add just under half an ulp, plus one if the kept part is odd, then truncate;
  // a carry out of the mantissa correctly bumps the exponent.
  Codes lowestKept = (magnitude >> kDroppedBits) & 1u;
  Codes normal =
      (magnitude + ((1u << (kDroppedBits - 1)) - 1u) + lowestKept - kRebias) >> kDroppedBits;
  // Subnormal results: adding a float whose ulp is the format's subnormal step makes the FPU round
  // to that step (ties to even); the low bits of the sum are then the code.
  constexpr uint32_t kStepMagicBits = static_cast<uint32_t>(151 - kBias - kMantissaBits) << 23;
  Reals sum = std::bit_cast<Reals>(magnitude) + std::bit_cast<float>(kStepMagicBits);
  Codes subnormal = std::bit_cast<Codes>(sum) - kStepMagicBits;
  return isBelow<N>(magnitude, kMinNormalBits) ? subnormal : normal;
}

/// The NaN code of a format with IEEE-like NaNs: sign and leading payload bits kept.
template <int kMantissaBits, int N>
[[gnu::always_inline]] inline CodeLanes<N> nanCode(const CodeLanes<N>& magnitude,
                                                   uint32_t exponentAllOnes) {
  using Codes = CodeLanes<N>;
  constexpr uint32_t kQuietBit = 1u << (kMantissaBits - 1);
  Codes payload = (magnitude >> (23 - kMantissaBits)) & ((1u << kMantissaBits) - 1u);
  Codes quiet = payload == 0u ? splat<Codes>(kQuietBit) : splat<Codes>(0u);
  return payload | quiet | exponentAllOnes;
}

/// Small unsigned integers (below 2^24) times a power of two, as float.
template <int N>
[[gnu::always_inline]] inline CodeLanes<N> scaledIntegerBits(const CodeLanes<N>& value,
                                                             float scale) {
  auto asReal = convertLanes<RealLanes<N>>(std::bit_cast<Lanes<int32_t, N>>(value));
  return std::bit_cast<CodeLanes<N>>(asReal * scale);
}

struct HalfFormat {
  using Storage = uint16_t;

  template <int N>
  [[gnu::always_inline]] static inline RealLanes<N> toFloat(const CodeLanes<N>& code) {
    using Codes = CodeLanes<N>;
    Codes magnitude = code & 0x7FFFu;
    Codes sign = (code & 0x8000u) << 16;
    Codes normal = (magnitude << 13) + (112u << 23);
    Codes special = (magnitude << 13) | kFloatInfinityBits;
    Codes subnormal = scaledIntegerBits<N>(magnitude, 0x1p-24f);
    Codes bits = isBelow<N>(magnitude, 0x400u)
                     ? subnormal
                     : (isAtLeast<N>(magnitude, 0x7C00u) ? special : normal);
    return std::bit_cast<RealLanes<N>>(bits | sign);
  }

  template <int N>
  [[gnu::always_inline]] static inline CodeLanes<N> fromFloat(const RealLanes<N>& value) {
    using Codes = CodeLanes<N>;
    Codes bits = std::bit_cast<Codes>(value);
    Codes magnitude = bits & kFloatMagnitudeMask;
    Codes sign = (bits >> 16) & 0x8000u;
    Codes finite = roundMagnitude<10, 15, N>(magnitude);
    Codes infinity = splat<Codes>(0x7C00u);
    // 65536 and beyond overflow; [65520, 65536) rounds up to the infinity code by itself.
    Codes code = isAtLeast<N>(magnitude, 0x47800000u) ? infinity : finite;
    code = isAbove<N>(magnitude, kFloatInfinityBits) ? nanCode<10, N>(magnitude, 0x7C00u) : code;
    return code | sign;
  }
};

struct Bfloat16Format {
  using Storage = uint16_t;

  template <int N>
  [[gnu::always_inline]] static inline RealLanes<N> toFloat(const CodeLanes<N>& code) {
    return std::bit_cast<RealLanes<N>>(code << 16);
  }

  template <int N>
  [[gnu::always_inline]] static inline CodeLanes<N> fromFloat(const RealLanes<N>& value) {
    using Codes = CodeLanes<N>;
    Codes bits = std::bit_cast<Codes>(value);
    Codes magnitude = bits & kFloatMagnitudeMask;
    // Same layout as float's top half: subnormals and overflow to infinity need no special case.
    Codes rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
    Codes nan = nanCode<7, N>(magnitude, 0x7F80u) | ((bits >> 16) & 0x8000u);
    return isAbove<N>(magnitude, kFloatInfinityBits) ? nan : rounded;
  }
};

/// fp8 e4m3 "fn": bias 7, no infinity, S.1111.111 is NaN, largest finite 448.
struct Fp8e4m3Format {
  using Storage = uint8_t;
  static constexpr uint32_t kMaxFiniteCode = 0x7E;
  static constexpr uint32_t kNanCode = 0x7F;

  template <int N>
  [[gnu::always_inline]] static inline RealLanes<N> toFloat(const CodeLanes<N>& code) {
    using Codes = CodeLanes<N>;
    Codes magnitude = code & 0x7Fu;
    Codes sign = (code & 0x80u) << 24;
    Codes normal = (magnitude << 20) + (120u << 23);
    Codes subnormal = scaledIntegerBits<N>(magnitude, 0x1p-9f);
    Codes nan = splat<Codes>(0x7FC00000u);
    Codes bits = isBelow<N>(magnitude, 8u) ? subnormal : (magnitude == kNanCode ? nan : normal);
    return std::bit_cast<RealLanes<N>>(bits | sign);
  }

  template <int N>
  [[gnu::always_inline]] static inline CodeLanes<N> fromFloat(const RealLanes<N>& value) {
    using Codes = CodeLanes<N>;
    Codes bits = std::bit_cast<Codes>(value);
    Codes magnitude = bits & kFloatMagnitudeMask;
    Codes sign = (bits >> 24) & 0x80u;
    Codes finite = roundMagnitude<3, 7, N>(magnitude);
    // Below 448 the rounding never passes 448; from 448 up (infinity too) saturate.
    Codes code = isAtLeast<N>(magnitude, std::bit_cast<uint32_t>(448.0f))
                     ? splat<Codes>(kMaxFiniteCode)
                     : finite;
    code = isAbove<N>(magnitude, kFloatInfinityBits) ? splat<Codes>(kNanCode) : code;
    return code | sign;
  }
};

/// fp8 e5m2: bias 15, IEEE-like infinities and NaNs, largest finite 57344.
struct Fp8e5m2Format {
  using Storage = uint8_t;
  static constexpr uint32_t kMaxFiniteCode = 0x7B;

  template <int N>
  [[gnu::always_inline]] static inline RealLanes<N> toFloat(const CodeLanes<N>& code) {
    using Codes = CodeLanes<N>;
    Codes magnitude = code & 0x7Fu;
    Codes sign = (code & 0x80u) << 24;
    Codes normal = (magnitude << 21) + (112u << 23);
    Codes special = (magnitude << 21) | kFloatInfinityBits;
    Codes subnormal = scaledIntegerBits<N>(magnitude, 0x1p-16f);
    Codes bits =
        isBelow<N>(magnitude, 4u) ? subnormal : (isAtLeast<N>(magnitude, 0x7Cu) ? special : normal);
    return std::bit_cast<RealLanes<N>>(bits | sign);
  }

  template <int N>
  [[gnu::always_inline]] static inline CodeLanes<N> fromFloat(const RealLanes<N>& value) {
    using Codes = CodeLanes<N>;
    Codes bits = std::bit_cast<Codes>(value);
    Codes magnitude = bits & kFloatMagnitudeMask;
    Codes sign = (bits >> 24) & 0x80u;
    Codes finite = roundMagnitude<2, 15, N>(magnitude);
    Codes code = isAtLeast<N>(magnitude, std::bit_cast<uint32_t>(57344.0f))
                     ? splat<Codes>(kMaxFiniteCode)
                     : finite;
    code = isAbove<N>(magnitude, kFloatInfinityBits) ? nanCode<2, N>(magnitude, 0x7Cu) : code;
    return code | sign;
  }
};

}  // namespace weft::algorithms
