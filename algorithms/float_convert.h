#pragma once
// Conversions between float and the narrow floating formats: IEEE half, bfloat16, and the two fp8
// formats (e4m3 "fn": no infinity, max 448; e5m2: IEEE-like, max 57344). float -> narrow rounds to
// nearest even; float -> fp8 saturates finite values to the largest finite value (as CUDA's
// __NV_SATFINITE conversions do); NaN stays NaN.

#include <cstdint>

#include "algorithms/datatype.h"

namespace weft::algorithms {

float halfToFloat(uint16_t bits);
uint16_t floatToHalf(float value);
float bfloat16ToFloat(uint16_t bits);
uint16_t floatToBfloat16(float value);
float fp8e4m3ToFloat(uint8_t bits);
uint8_t floatToFp8e4m3(float value);
float fp8e5m2ToFloat(uint8_t bits);
uint8_t floatToFp8e5m2(float value);

/// Reads element `index` of an array of `type` as a double (exact for every type but 64-bit
/// integers beyond 2^53).
double loadAsDouble(DataType type, const void* array, size_t index);
/// Writes `value` into element `index` of an array of `type`, converting as above (integers
/// truncate toward zero; out-of-range integers wrap as a cast through int64/uint64 does).
void storeFromDouble(DataType type, double value, void* array, size_t index);

}  // namespace weft::algorithms
