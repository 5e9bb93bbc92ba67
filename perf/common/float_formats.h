#pragma once
// Conversions between double and the narrow floating-point formats of ncclDataType_t (half,
// bfloat16, fp8 e4m3 and e5m2), written out here so that the benchmarks need nothing but nccl.h.

#include <cstdint>

namespace weft::perf {

/// A binary floating-point format of at most 32 bits: sign, exponentBits, mantissaBits (without
/// the implicit leading bit). Formats without infinity (e4m3, "fn") use the all-ones exponent for
/// normal numbers and only all-ones exponent and mantissa for NaN.
struct FloatFormat {
  int exponentBits;
  int mantissaBits;
  bool hasInfinity;
};

inline constexpr FloatFormat kHalfFormat{5, 10, true};
inline constexpr FloatFormat kBfloat16Format{8, 7, true};
inline constexpr FloatFormat kFloat8E4M3Format{4, 3, false};
inline constexpr FloatFormat kFloat8E5M2Format{5, 2, true};

/// Rounds value to the nearest number of format (ties to even) and returns its bit pattern in the
/// low bits. Beyond the largest finite number: infinity where the format has one, otherwise the
/// largest finite number of that sign.
uint32_t encodeFloat(double value, FloatFormat format);

/// The value of bits (low 1 + exponentBits + mantissaBits bits) in format; exact.
double decodeFloat(uint32_t bits, FloatFormat format);

/// The largest finite value of format.
double largestFinite(FloatFormat format);

}  // namespace weft::perf
