#include "algorithms/float_convert.h"

#include <bit>
#include <cmath>
#include <cstring>

#include "algorithms/reduce_narrow_float.h"

namespace weft::algorithms {
namespace {

template <class T>
T loadElement(const void* array, size_t index) {
  T value;
  std::memcpy(&value, static_cast<const unsigned char*>(array) + index * sizeof(T), sizeof(T));
  return value;
}

template <class T>
void storeElement(void* array, size_t index, T value) {
  std::memcpy(static_cast<unsigned char*>(array) + index * sizeof(T), &value, sizeof(T));
}

// Rounds to float with "round to odd": truncate, then set the lowest bit if anything was lost.
// Rounding that float again to a format at least two bits narrower gives the correctly rounded
// (nearest even) result of the original double, which a plain double -> float -> narrow would not.
float roundToOddFloat(double value) {
  float nearest = static_cast<float>(value);
  if (std::isnan(value) || static_cast<double>(nearest) == value) {
    return nearest;
  }
  float truncated = nearest;
  if (std::fabs(static_cast<double>(nearest)) > std::fabs(value)) {
    truncated = std::nextafter(nearest, 0.0f);
  }
  return std::bit_cast<float>(std::bit_cast<uint32_t>(truncated) | 1u);
}

// Integer value of `value` modulo 2^64 after truncation toward zero; 0 for NaN and infinities.
uint64_t wrapToUint64(double value) {
  if (!std::isfinite(value)) {
    return 0;
  }
  constexpr double kTwoTo64 = 18446744073709551616.0;
  double remainder = std::fmod(std::trunc(value), kTwoTo64);  // exact
  if (remainder < 0) {
    return uint64_t{0} - static_cast<uint64_t>(-remainder);
  }
  return static_cast<uint64_t>(remainder);
}

}  // namespace

float halfToFloat(uint16_t bits) { return HalfFormat::toFloat<1>(bits); }
uint16_t floatToHalf(float value) { return static_cast<uint16_t>(HalfFormat::fromFloat<1>(value)); }
float bfloat16ToFloat(uint16_t bits) { return Bfloat16Format::toFloat<1>(bits); }
uint16_t floatToBfloat16(float value) {
  return static_cast<uint16_t>(Bfloat16Format::fromFloat<1>(value));
}
float fp8e4m3ToFloat(uint8_t bits) { return Fp8e4m3Format::toFloat<1>(bits); }
uint8_t floatToFp8e4m3(float value) {
  return static_cast<uint8_t>(Fp8e4m3Format::fromFloat<1>(value));
}
float fp8e5m2ToFloat(uint8_t bits) { return Fp8e5m2Format::toFloat<1>(bits); }
uint8_t floatToFp8e5m2(float value) {
  return static_cast<uint8_t>(Fp8e5m2Format::fromFloat<1>(value));
}

double loadAsDouble(DataType type, const void* array, size_t index) {
  switch (type) {
    case DataType::kInt8: return loadElement<int8_t>(array, index);
    case DataType::kUint8: return loadElement<uint8_t>(array, index);
    case DataType::kInt32: return loadElement<int32_t>(array, index);
    case DataType::kUint32: return loadElement<uint32_t>(array, index);
    case DataType::kInt64: return static_cast<double>(loadElement<int64_t>(array, index));
    case DataType::kUint64: return static_cast<double>(loadElement<uint64_t>(array, index));
    case DataType::kFloat16: return halfToFloat(loadElement<uint16_t>(array, index));
    case DataType::kFloat32: return loadElement<float>(array, index);
    case DataType::kFloat64: return loadElement<double>(array, index);
    case DataType::kBfloat16: return bfloat16ToFloat(loadElement<uint16_t>(array, index));
    case DataType::kFloat8e4m3: return fp8e4m3ToFloat(loadElement<uint8_t>(array, index));
    case DataType::kFloat8e5m2: return fp8e5m2ToFloat(loadElement<uint8_t>(array, index));
  }
  return 0;
}

void storeFromDouble(DataType type, double value, void* array, size_t index) {
  switch (type) {
    case DataType::kInt8:
    case DataType::kUint8:
      storeElement(array, index, static_cast<uint8_t>(wrapToUint64(value)));
      return;
    case DataType::kInt32:
    case DataType::kUint32:
      storeElement(array, index, static_cast<uint32_t>(wrapToUint64(value)));
      return;
    case DataType::kInt64:
    case DataType::kUint64: storeElement(array, index, wrapToUint64(value)); return;
    case DataType::kFloat16:
      storeElement(array, index, floatToHalf(roundToOddFloat(value)));
      return;
    case DataType::kFloat32: storeElement(array, index, static_cast<float>(value)); return;
    case DataType::kFloat64: storeElement(array, index, value); return;
    case DataType::kBfloat16:
      storeElement(array, index, floatToBfloat16(roundToOddFloat(value)));
      return;
    case DataType::kFloat8e4m3:
      storeElement(array, index, floatToFp8e4m3(roundToOddFloat(value)));
      return;
    case DataType::kFloat8e5m2:
      storeElement(array, index, floatToFp8e5m2(roundToOddFloat(value)));
      return;
  }
}

}  // namespace weft::algorithms
