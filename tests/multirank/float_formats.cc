#include "tests/multirank/float_formats.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace weft::multirank {
namespace {

struct FormatShape {
  int exponentBits;
  int mantissaBits;
  // Infinity and NaN take the all-ones exponent (IEEE style). Otherwise (e4m3) only S.1111.111 is
  // NaN and the rest of that exponent holds finite values.
  bool ieeeSpecials;
  bool saturates;

  int bias() const { return (1 << (exponentBits - 1)) - 1; }
  uint32_t exponentMask() const { return (1u << exponentBits) - 1; }
  uint32_t mantissaMask() const { return (1u << mantissaBits) - 1; }
  uint32_t signBit() const { return 1u << (exponentBits + mantissaBits); }
  // The largest finite value's bits, without the sign.
  uint32_t maxFiniteBits() const {
    if (ieeeSpecials) return ((exponentMask() - 1) << mantissaBits) | mantissaMask();
    return (exponentMask() << mantissaBits) | (mantissaMask() - 1);
  }
  uint32_t infinityBits() const { return exponentMask() << mantissaBits; }
  uint32_t nanBits() const {
    if (ieeeSpecials) return infinityBits() | (1u << (mantissaBits - 1));
    return (exponentMask() << mantissaBits) | mantissaMask();
  }
};

FormatShape shapeOf(SmallFloat format) {
  switch (format) {
    case SmallFloat::kHalf: return {5, 10, true, false};
    case SmallFloat::kBfloat16: return {8, 7, true, false};
    case SmallFloat::kE4m3: return {4, 3, false, true};
    case SmallFloat::kE5m2: return {5, 2, true, true};
  }
  return {5, 10, true, false};
}

double magnitudeOf(const FormatShape& shape, uint32_t bits) {
  uint32_t exponent = (bits >> shape.mantissaBits) & shape.exponentMask();
  uint32_t mantissa = bits & shape.mantissaMask();
  if (exponent == 0) return std::ldexp(static_cast<double>(mantissa), 1 - shape.bias() - shape.mantissaBits);
  return std::ldexp(static_cast<double>(mantissa | (1u << shape.mantissaBits)),
                    static_cast<int>(exponent) - shape.bias() - shape.mantissaBits);
}

}  // namespace

float decodeSmallFloat(SmallFloat format, uint32_t bits) {
  const FormatShape shape = shapeOf(format);
  const bool negative = (bits & shape.signBit()) != 0;
  const uint32_t magnitude = bits & (shape.signBit() - 1);
  double value;
  if (magnitude == shape.nanBits() ||
      (shape.ieeeSpecials && (magnitude >> shape.mantissaBits) == shape.exponentMask() &&
       (magnitude & shape.mantissaMask()) != 0)) {
    value = std::numeric_limits<double>::quiet_NaN();
  } else if (shape.ieeeSpecials && magnitude == shape.infinityBits()) {
    value = std::numeric_limits<double>::infinity();
  } else {
    value = magnitudeOf(shape, magnitude);
  }
  return static_cast<float>(negative ? -value : value);
}

uint32_t encodeSmallFloat(SmallFloat format, double value) {
  const FormatShape shape = shapeOf(format);
  const uint32_t sign = std::signbit(value) ? shape.signBit() : 0;
  if (std::isnan(value)) return sign | shape.nanBits();
  const double magnitude = std::fabs(value);
  const uint32_t overflowBits = shape.saturates ? shape.maxFiniteBits() : shape.infinityBits();
  if (std::isinf(magnitude)) return sign | overflowBits;
  if (magnitude == 0) return sign;

  // Scale so that one unit is the quantum of the value's binade (subnormals share the smallest
  // normal binade's quantum), then round to an integer: nearbyint rounds ties to even.
  int binade;
  std::frexp(magnitude, &binade);
  const int minExponent = 1 - shape.bias();
  const int exponent = std::max(binade - 1, minExponent);
  const int quantum = exponent - shape.mantissaBits;
  const double units = std::nearbyint(std::ldexp(magnitude, -quantum));
  if (std::ldexp(units, quantum) > magnitudeOf(shape, shape.maxFiniteBits())) return sign | overflowBits;
  if (units == 0) return sign;

  uint32_t mantissa = static_cast<uint32_t>(units);
  const uint32_t implicitBit = 1u << shape.mantissaBits;
  if (mantissa < implicitBit) return sign | mantissa;  // subnormal
  int biased = exponent + shape.bias();
  if (mantissa == 2 * implicitBit) {  // rounding carried into the next binade
    mantissa = implicitBit;
    ++biased;
  }
  return sign | (static_cast<uint32_t>(biased) << shape.mantissaBits) | (mantissa - implicitBit);
}

float decodeBfloat16(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

uint16_t encodeBfloat16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if (std::isnan(value)) return static_cast<uint16_t>((bits >> 16) | 0x40);  // stays a NaN
  // Adding just under half a unit of the result, plus its lowest bit, rounds to nearest even; a
  // carry out of the largest finite value lands on infinity, as rounding must.
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

}  // namespace weft::multirank
