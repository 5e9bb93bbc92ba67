#pragma once
// The floating-point formats narrower than float that NCCL reduces: IEEE half, bfloat16 and the two
// OCP fp8 formats. The suite's own conversions, so that it checks the runtime against an
// independent implementation.

#include <cstdint>

namespace weft::multirank {

enum class SmallFloat {
  kHalf,      // 1 sign, 5 exponent, 10 mantissa bits; infinities and NaN
  kBfloat16,  // 1, 8, 7; infinities and NaN
  kE4m3,      // 1, 4, 3; no infinity, NaN is S.1111.111, largest finite 448
  kE5m2,      // 1, 5, 2; infinities and NaN, largest finite 57344
};

/// The exact value of `bits` (the low 8 or 16 bits), NaN and infinities included.
float decodeSmallFloat(SmallFloat format, uint32_t bits);

/// `value` rounded to the nearest value of the format, ties to even. Half and bfloat16 overflow
/// to infinity; fp8 saturates to its largest finite magnitude (as CUDA's satfinite conversions,
/// which NCCL uses); NaN stays NaN.
uint32_t encodeSmallFloat(SmallFloat format, double value);

/// Fast equivalents for bfloat16, the upper half of a float (the large runs reduce a million of
/// them per call). Same results as the general functions for every float.
float decodeBfloat16(uint16_t bits);
uint16_t encodeBfloat16(float value);

}  // namespace weft::multirank
