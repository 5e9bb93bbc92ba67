#include "perf/common/float_formats.h"

#include <cmath>

namespace weft::perf {
namespace {

int bias(FloatFormat f) { return (1 << (f.exponentBits - 1)) - 1; }
uint32_t exponentMask(FloatFormat f) { return (1u << f.exponentBits) - 1; }
uint32_t mantissaMask(FloatFormat f) { return (1u << f.mantissaBits) - 1; }
uint32_t signBit(FloatFormat f) { return 1u << (f.exponentBits + f.mantissaBits); }

uint32_t nanBits(FloatFormat f) {
  // Quiet NaN where there is an infinity; the single NaN pattern (all ones) otherwise.
  uint32_t mantissa = f.hasInfinity ? 1u << (f.mantissaBits - 1) : mantissaMask(f);
  return (exponentMask(f) << f.mantissaBits) | mantissa;
}

}  // namespace

double largestFinite(FloatFormat f) {
  int maxExponentField = static_cast<int>(exponentMask(f)) - (f.hasInfinity ? 1 : 0);
  // Without infinity, the all-ones mantissa of the top exponent is NaN: one step below it.
  uint32_t maxMantissa = f.hasInfinity ? mantissaMask(f) : mantissaMask(f) - 1;
  return std::ldexp(static_cast<double>((1u << f.mantissaBits) + maxMantissa),
                    maxExponentField - bias(f) - f.mantissaBits);
}

uint32_t encodeFloat(double value, FloatFormat f) {
  uint32_t sign = std::signbit(value) ? signBit(f) : 0;
  if (std::isnan(value)) return sign | nanBits(f);
  double magnitude = std::fabs(value);
  if (magnitude == 0) return sign;

  const int minNormalExponent = 1 - bias(f);
  int frexpExponent = 0;
  std::frexp(magnitude, &frexpExponent);
  // Spacing of representable numbers around magnitude; subnormals share the smallest one.
  int exponent = frexpExponent - 1 < minNormalExponent ? minNormalExponent : frexpExponent - 1;
  double quantum = std::ldexp(1.0, exponent - f.mantissaBits);
  double rounded = std::nearbyint(magnitude / quantum) * quantum;  // default mode: ties to even

  double largest = largestFinite(f);
  if (std::isinf(magnitude) || rounded > largest) {
    if (f.hasInfinity) return sign | (exponentMask(f) << f.mantissaBits);
    return sign | encodeFloat(largest, f);
  }
  if (rounded == 0) return sign;
  if (rounded < std::ldexp(1.0, minNormalExponent)) {
    auto mantissa = static_cast<uint32_t>(rounded / std::ldexp(1.0, minNormalExponent - f.mantissaBits));
    return sign | mantissa;
  }
  std::frexp(rounded, &frexpExponent);
  int unbiased = frexpExponent - 1;
  auto significand = static_cast<uint32_t>(std::ldexp(rounded, f.mantissaBits - unbiased));
  auto exponentField = static_cast<uint32_t>(unbiased + bias(f));
  return sign | (exponentField << f.mantissaBits) | (significand & mantissaMask(f));
}

double decodeFloat(uint32_t bits, FloatFormat f) {
  bool negative = (bits & signBit(f)) != 0;
  uint32_t exponentField = (bits >> f.mantissaBits) & exponentMask(f);
  uint32_t mantissa = bits & mantissaMask(f);
  double magnitude;
  if (exponentField == exponentMask(f) && f.hasInfinity) {
    magnitude = mantissa == 0 ? INFINITY : NAN;
  } else if (exponentField == exponentMask(f) && mantissa == mantissaMask(f)) {
    magnitude = NAN;
  } else if (exponentField == 0) {
    magnitude = std::ldexp(static_cast<double>(mantissa), 1 - bias(f) - f.mantissaBits);
  } else {
    magnitude = std::ldexp(static_cast<double>((1u << f.mantissaBits) + mantissa),
                           static_cast<int>(exponentField) - bias(f) - f.mantissaBits);
  }
  return negative ? -magnitude : magnitude;
}

}  // namespace weft::perf
