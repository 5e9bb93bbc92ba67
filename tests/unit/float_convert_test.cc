#include "algorithms/float_convert.h"

#include <gtest/gtest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

namespace weft::algorithms {
namespace {

// A narrow format described by its fields, and reference conversions built from ldexp and
// nearbyint on doubles: no bit tricks shared with the code under test.
struct Format {
  const char* name;
  DataType type;
  int exponentBits;
  int mantissaBits;
  int bias;
  bool ieeeSpecials;  // exponent all ones means infinity/NaN; otherwise only S.1..1.1..1 is NaN
  bool saturates;     // finite overflow and infinity become the largest finite value
  uint32_t (*encode)(float);
  float (*decode)(uint32_t);
};

const Format kHalf{"half",
                   DataType::kFloat16,
                   5,
                   10,
                   15,
                   true,
                   false,
                   [](float v) -> uint32_t { return floatToHalf(v); },
                   [](uint32_t c) { return halfToFloat(static_cast<uint16_t>(c)); }};
const Format kBfloat16{"bfloat16",
                       DataType::kBfloat16,
                       8,
                       7,
                       127,
                       true,
                       false,
                       [](float v) -> uint32_t { return floatToBfloat16(v); },
                       [](uint32_t c) { return bfloat16ToFloat(static_cast<uint16_t>(c)); }};
const Format kE4m3{"e4m3",
                   DataType::kFloat8e4m3,
                   4,
                   3,
                   7,
                   false,
                   true,
                   [](float v) -> uint32_t { return floatToFp8e4m3(v); },
                   [](uint32_t c) { return fp8e4m3ToFloat(static_cast<uint8_t>(c)); }};
const Format kE5m2{"e5m2",
                   DataType::kFloat8e5m2,
                   5,
                   2,
                   15,
                   true,
                   true,
                   [](float v) -> uint32_t { return floatToFp8e5m2(v); },
                   [](uint32_t c) { return fp8e5m2ToFloat(static_cast<uint8_t>(c)); }};

uint32_t codeCount(const Format& f) { return 1u << (1 + f.exponentBits + f.mantissaBits); }
uint32_t signBit(const Format& f) { return 1u << (f.exponentBits + f.mantissaBits); }
uint32_t exponentField(const Format& f, uint32_t code) {
  return (code >> f.mantissaBits) & ((1u << f.exponentBits) - 1);
}
uint32_t mantissaField(const Format& f, uint32_t code) {
  return code & ((1u << f.mantissaBits) - 1);
}
bool isNanCode(const Format& f, uint32_t code) {
  const uint32_t allOnes = (1u << f.exponentBits) - 1;
  if (exponentField(f, code) != allOnes) return false;
  if (f.ieeeSpecials) return mantissaField(f, code) != 0;
  return mantissaField(f, code) == (1u << f.mantissaBits) - 1;
}
bool isInfinityCode(const Format& f, uint32_t code) {
  return f.ieeeSpecials && exponentField(f, code) == (1u << f.exponentBits) - 1 &&
         mantissaField(f, code) == 0;
}
uint32_t maxFiniteCode(const Format& f) {
  const uint32_t allOnes = (1u << f.exponentBits) - 1;
  if (f.ieeeSpecials) return ((allOnes - 1) << f.mantissaBits) | ((1u << f.mantissaBits) - 1);
  return (allOnes << f.mantissaBits) | ((1u << f.mantissaBits) - 2);
}

double referenceDecode(const Format& f, uint32_t code) {
  const double sign = (code & signBit(f)) ? -1.0 : 1.0;
  if (isNanCode(f, code)) return std::copysign(std::numeric_limits<double>::quiet_NaN(), sign);
  if (isInfinityCode(f, code)) return sign * std::numeric_limits<double>::infinity();
  const int exponent = static_cast<int>(exponentField(f, code));
  const double mantissa = mantissaField(f, code);
  if (exponent == 0) return sign * std::ldexp(mantissa, 1 - f.bias - f.mantissaBits);
  return sign *
         std::ldexp(std::ldexp(1.0, f.mantissaBits) + mantissa, exponent - f.bias - f.mantissaBits);
}

// Correct rounding of any non-NaN double, ties to even, with the format's overflow rule.
uint32_t referenceEncode(const Format& f, double value) {
  const uint32_t sign = std::signbit(value) ? signBit(f) : 0;
  const double magnitude = std::fabs(value);
  const uint32_t maxCode = maxFiniteCode(f);
  const uint32_t overflowCode =
      f.saturates ? maxCode : ((1u << f.exponentBits) - 1) << f.mantissaBits;
  if (magnitude == 0) return sign;
  if (std::isinf(magnitude)) return sign | overflowCode;
  const int exponent = std::max(std::ilogb(magnitude), 1 - f.bias);
  const double quantum = std::ldexp(1.0, exponent - f.mantissaBits);
  const double steps = std::nearbyint(magnitude / quantum);  // default mode: ties to even
  if (steps * quantum > referenceDecode(f, maxCode)) return sign | overflowCode;
  const auto code = (static_cast<uint32_t>(exponent + f.bias - 1) << f.mantissaBits) +
                    static_cast<uint32_t>(steps);
  return sign | code;
}

void expectSameValue(double expected, float actual, const char* what, uint32_t code) {
  if (std::isnan(expected)) {
    EXPECT_TRUE(std::isnan(actual)) << what << " code 0x" << std::hex << code;
  } else {
    EXPECT_EQ(static_cast<double>(actual), expected) << what << " code 0x" << std::hex << code;
  }
  EXPECT_EQ(std::signbit(actual), std::signbit(expected)) << what << " code 0x" << std::hex << code;
}

class FloatFormatTest : public ::testing::TestWithParam<const Format*> {};

TEST_P(FloatFormatTest, DecodesEveryCodeExactly) {
  const Format& f = *GetParam();
  for (uint32_t code = 0; code < codeCount(f); ++code) {
    expectSameValue(referenceDecode(f, code), f.decode(code), f.name, code);
  }
}

TEST_P(FloatFormatTest, EveryCodeRoundTrips) {
  const Format& f = *GetParam();
  for (uint32_t code = 0; code < codeCount(f); ++code) {
    uint32_t expected = code;
    // Infinity saturates in the fp8 formats (the only codes that do not come back).
    if (f.saturates && isInfinityCode(f, code)) expected = (code & signBit(f)) | maxFiniteCode(f);
    EXPECT_EQ(f.encode(f.decode(code)), expected) << f.name << " code 0x" << std::hex << code;
  }
}

TEST_P(FloatFormatTest, TiesGoToEvenAndNeighboursToTheNearer) {
  const Format& f = *GetParam();
  for (uint32_t sign : {0u, signBit(f)}) {
    for (uint32_t code = 0; code < maxFiniteCode(f); ++code) {
      const double low = referenceDecode(f, sign | code);
      const double high = referenceDecode(f, sign | (code + 1));
      const auto midpoint = static_cast<float>((low + high) / 2);  // exact in float
      ASSERT_EQ(static_cast<double>(midpoint), (low + high) / 2);
      const uint32_t even = (code % 2 == 0) ? code : code + 1;
      EXPECT_EQ(f.encode(midpoint), sign | even) << f.name << " tie above 0x" << std::hex << code;
      const float towardLow = std::nextafter(midpoint, static_cast<float>(low));
      const float towardHigh = std::nextafter(midpoint, static_cast<float>(high));
      EXPECT_EQ(f.encode(towardLow), sign | code) << f.name << " below tie 0x" << std::hex << code;
      EXPECT_EQ(f.encode(towardHigh), sign | (code + 1))
          << f.name << " above tie 0x" << std::hex << code;
    }
  }
}

TEST_P(FloatFormatTest, RandomFloatsMatchTheReference) {
  const Format& f = *GetParam();
  std::mt19937 rng(1234);
  for (int i = 0; i < 400000; ++i) {
    // Half the draws are any bit pattern, half land near the format's own range.
    uint32_t bits = rng();
    if (i % 2 == 1) {
      const int exponent = 127 - f.bias - f.mantissaBits - 2 +
                           static_cast<int>(rng() % ((1u << f.exponentBits) + f.mantissaBits + 4));
      bits = (bits & 0x807FFFFFu) | (static_cast<uint32_t>(std::clamp(exponent, 0, 254)) << 23);
    }
    const float value = std::bit_cast<float>(bits);
    if (std::isnan(value)) continue;
    ASSERT_EQ(f.encode(value), referenceEncode(f, value))
        << f.name << " float bits 0x" << std::hex << bits;
  }
}

TEST_P(FloatFormatTest, NanStaysNanWithItsSign) {
  const Format& f = *GetParam();
  for (uint32_t bits : {0x7FC00000u, 0x7F800001u, 0x7FFFFFFFu, 0x7FA00000u}) {
    for (uint32_t sign : {0u, 0x80000000u}) {
      const uint32_t code = f.encode(std::bit_cast<float>(bits | sign));
      EXPECT_TRUE(isNanCode(f, code)) << f.name << " from 0x" << std::hex << (bits | sign);
      EXPECT_EQ((code & signBit(f)) != 0, sign != 0) << f.name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllNarrowFormats, FloatFormatTest,
                         ::testing::Values(&kHalf, &kBfloat16, &kE4m3, &kE5m2),
                         [](const auto& info) { return std::string(info.param->name); });

TEST(FloatConvert, HalfOverflowsToInfinity) {
  EXPECT_EQ(floatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(floatToHalf(65519.996f), 0x7BFF);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7C00);  // the tie rounds to the even code: infinity
  EXPECT_EQ(floatToHalf(1e10f), 0x7C00);
  EXPECT_EQ(floatToHalf(-std::numeric_limits<float>::infinity()), 0xFC00);
  EXPECT_EQ(floatToHalf(std::numeric_limits<float>::quiet_NaN()), 0x7E00);
}

TEST(FloatConvert, HalfSubnormalsRoundToNearestEven) {
  EXPECT_EQ(floatToHalf(0x1p-24f), 0x0001);
  EXPECT_EQ(floatToHalf(0x1p-25f), 0x0000);      // tie between 0 and 1: even
  EXPECT_EQ(floatToHalf(0x1.8p-25f), 0x0001);    // 0.75 of the step
  EXPECT_EQ(floatToHalf(0x1.8p-24f), 0x0002);    // tie between 1 and 2: even
  EXPECT_EQ(floatToHalf(0x1.ff8p-15f), 0x03FF);  // largest subnormal
  EXPECT_EQ(floatToHalf(0x1.ffcp-15f), 0x0400);  // tie with the smallest normal: even
  EXPECT_EQ(floatToHalf(-0x1p-30f), 0x8000);     // underflows to -0
  EXPECT_EQ(halfToFloat(0x0001), 0x1p-24f);
  EXPECT_EQ(halfToFloat(0x83FF), -0x1.ff8p-15f);
}

TEST(FloatConvert, Bfloat16RoundsAndOverflows) {
  EXPECT_EQ(floatToBfloat16(1.0f), 0x3F80);
  EXPECT_EQ(floatToBfloat16(1.0f + 0x1p-8f), 0x3F80);  // tie: even
  EXPECT_EQ(floatToBfloat16(1.0f + 0x3p-8f), 0x3F82);  // tie: even (up)
  EXPECT_EQ(floatToBfloat16(1.0f + 0x1p-9f), 0x3F80);
  EXPECT_EQ(floatToBfloat16(FLT_MAX), 0x7F80);    // beyond the largest bfloat16
  EXPECT_EQ(floatToBfloat16(0x1p-149f), 0x0000);  // float's smallest subnormal: half a step
  EXPECT_EQ(floatToBfloat16(0x1p-133f), 0x0001);  // bfloat16's smallest subnormal
  EXPECT_EQ(bfloat16ToFloat(0xC040), -3.0f);
}

TEST(FloatConvert, Fp8e4m3SaturatesAndHasNoInfinity) {
  EXPECT_EQ(floatToFp8e4m3(448.0f), 0x7E);
  EXPECT_EQ(floatToFp8e4m3(464.0f), 0x7E);  // would round past 448
  EXPECT_EQ(floatToFp8e4m3(1e30f), 0x7E);
  EXPECT_EQ(floatToFp8e4m3(std::numeric_limits<float>::infinity()), 0x7E);
  EXPECT_EQ(floatToFp8e4m3(-std::numeric_limits<float>::infinity()), 0xFE);
  EXPECT_EQ(floatToFp8e4m3(std::numeric_limits<float>::quiet_NaN()), 0x7F);
  EXPECT_EQ(floatToFp8e4m3(-std::numeric_limits<float>::quiet_NaN()), 0xFF);
  EXPECT_EQ(floatToFp8e4m3(0x1p-9f), 0x01);     // smallest subnormal
  EXPECT_EQ(floatToFp8e4m3(0x1p-10f), 0x00);    // tie with zero: even
  EXPECT_EQ(floatToFp8e4m3(0x1.8p-10f), 0x01);  // 0.75 of the step
  EXPECT_EQ(floatToFp8e4m3(1.0f), 0x38);
  EXPECT_EQ(floatToFp8e4m3(1.0625f), 0x38);  // tie between 1 and 1.125: even
  EXPECT_EQ(fp8e4m3ToFloat(0x7E), 448.0f);
  EXPECT_TRUE(std::isnan(fp8e4m3ToFloat(0x7F)));
  EXPECT_TRUE(std::isnan(fp8e4m3ToFloat(0xFF)));
  EXPECT_EQ(fp8e4m3ToFloat(0x78), 256.0f);  // exponent all ones is an ordinary binade
}

TEST(FloatConvert, Fp8e5m2SaturatesInfinityAndOverflow) {
  EXPECT_EQ(floatToFp8e5m2(57344.0f), 0x7B);
  EXPECT_EQ(floatToFp8e5m2(61440.0f), 0x7B);
  EXPECT_EQ(floatToFp8e5m2(std::numeric_limits<float>::infinity()), 0x7B);
  EXPECT_EQ(floatToFp8e5m2(-std::numeric_limits<float>::infinity()), 0xFB);
  EXPECT_EQ(floatToFp8e5m2(std::numeric_limits<float>::quiet_NaN()), 0x7E);
  EXPECT_EQ(floatToFp8e5m2(0x1p-16f), 0x01);
  EXPECT_EQ(floatToFp8e5m2(0x1p-17f), 0x00);
  EXPECT_EQ(fp8e5m2ToFloat(0x7C), std::numeric_limits<float>::infinity());
  EXPECT_EQ(fp8e5m2ToFloat(0xFC), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(fp8e5m2ToFloat(0x3C), 1.0f);
}

TEST(FloatConvert, LoadAsDoubleReadsEveryType) {
  const int8_t i8[] = {0, -128};
  const uint8_t u8[] = {0, 255};
  const int32_t i32[] = {0, -2147483647 - 1};
  const uint32_t u32[] = {0, 4294967295u};
  const int64_t i64[] = {0, -(int64_t{1} << 53)};
  const uint64_t u64[] = {0, uint64_t{1} << 63};
  const uint16_t f16[] = {0, 0xC100};  // -2.5
  const float f32[] = {0, 0.1f};
  const double f64[] = {0, 0.1};
  const uint16_t bf16[] = {0, 0x3FC0};  // 1.5
  const uint8_t e4m3[] = {0, 0xB4};     // -0.75
  const uint8_t e5m2[] = {0, 0x7B};     // 57344
  EXPECT_EQ(loadAsDouble(DataType::kInt8, i8, 1), -128.0);
  EXPECT_EQ(loadAsDouble(DataType::kUint8, u8, 1), 255.0);
  EXPECT_EQ(loadAsDouble(DataType::kInt32, i32, 1), -2147483648.0);
  EXPECT_EQ(loadAsDouble(DataType::kUint32, u32, 1), 4294967295.0);
  EXPECT_EQ(loadAsDouble(DataType::kInt64, i64, 1), -9007199254740992.0);
  EXPECT_EQ(loadAsDouble(DataType::kUint64, u64, 1), 9223372036854775808.0);
  EXPECT_EQ(loadAsDouble(DataType::kFloat16, f16, 1), -2.5);
  EXPECT_EQ(loadAsDouble(DataType::kFloat32, f32, 1), static_cast<double>(0.1f));
  EXPECT_EQ(loadAsDouble(DataType::kFloat64, f64, 1), 0.1);
  EXPECT_EQ(loadAsDouble(DataType::kBfloat16, bf16, 1), 1.5);
  EXPECT_EQ(loadAsDouble(DataType::kFloat8e4m3, e4m3, 1), -0.75);
  EXPECT_EQ(loadAsDouble(DataType::kFloat8e5m2, e5m2, 1), 57344.0);
}

template <class T>
T storedAt1(DataType type, double value) {
  T array[3] = {T{7}, T{7}, T{7}};
  storeFromDouble(type, value, array, 1);
  EXPECT_EQ(array[0], T{7}) << "neighbour overwritten";
  EXPECT_EQ(array[2], T{7}) << "neighbour overwritten";
  return array[1];
}

TEST(FloatConvert, StoreFromDoubleTruncatesAndWrapsIntegers) {
  EXPECT_EQ(storedAt1<int8_t>(DataType::kInt8, -2.75), -2);
  EXPECT_EQ(storedAt1<int8_t>(DataType::kInt8, 200.0), -56);
  EXPECT_EQ(storedAt1<uint8_t>(DataType::kUint8, -1.0), 255);
  EXPECT_EQ(storedAt1<uint8_t>(DataType::kUint8, 2.999), 2);
  EXPECT_EQ(storedAt1<int32_t>(DataType::kInt32, -2147483648.0), -2147483647 - 1);
  EXPECT_EQ(storedAt1<int32_t>(DataType::kInt32, 2147483648.0), -2147483647 - 1);
  EXPECT_EQ(storedAt1<uint32_t>(DataType::kUint32, 4294967301.0), 5u);
  EXPECT_EQ(storedAt1<int64_t>(DataType::kInt64, -9223372036854775808.0), INT64_MIN);
  EXPECT_EQ(storedAt1<uint64_t>(DataType::kUint64, std::ldexp(1.0, 70) + std::ldexp(1.0, 20)),
            uint64_t{1} << 20);
  EXPECT_EQ(storedAt1<uint64_t>(DataType::kUint64, -1.0), UINT64_MAX);
  EXPECT_EQ(storedAt1<int32_t>(DataType::kInt32, std::nan("")), 0);
}

TEST(FloatConvert, StoreFromDoubleRoundsOnceFromDouble) {
  // 1 + 2^-11 + 2^-40 is just above a half tie; through a plain float it would become the tie and
  // round down to 1.
  EXPECT_EQ(storedAt1<uint16_t>(DataType::kFloat16, 1.0 + 0x1p-11 + 0x1p-40), 0x3C01);
  EXPECT_EQ(storedAt1<uint16_t>(DataType::kFloat16, 1.0 + 0x1p-11), 0x3C00);
  EXPECT_EQ(storedAt1<uint16_t>(DataType::kBfloat16, 1.0 + 0x1p-8 + 0x1p-40), 0x3F81);
  EXPECT_EQ(storedAt1<uint8_t>(DataType::kFloat8e4m3, 1.0625 + 0x1p-40), 0x39);
  EXPECT_EQ(storedAt1<uint8_t>(DataType::kFloat8e5m2, 1e300), 0x7B);
  EXPECT_EQ(storedAt1<uint16_t>(DataType::kFloat16, -1e300), 0xFC00);
  EXPECT_EQ(storedAt1<uint16_t>(DataType::kBfloat16, 1e300), 0x7F80);
  EXPECT_EQ(storedAt1<uint16_t>(DataType::kBfloat16, -1e-300), 0x8000);
  EXPECT_EQ(storedAt1<float>(DataType::kFloat32, 0.1), 0.1f);
  EXPECT_EQ(storedAt1<double>(DataType::kFloat64, 0.1), 0.1);
}

TEST_P(FloatFormatTest, RandomDoublesRoundLikeTheReference) {
  const Format& f = *GetParam();
  std::mt19937_64 rng(99);
  for (int i = 0; i < 200000; ++i) {
    // Doubles with full 53-bit mantissas around the format's range.
    const int exponent = -f.bias - f.mantissaBits - 2 +
                         static_cast<int>(rng() % ((1u << f.exponentBits) + f.mantissaBits + 4));
    const double mantissa = 1.0 + std::ldexp(static_cast<double>(rng() >> 11), -53);
    const double value = ((rng() & 1) ? -1.0 : 1.0) * std::ldexp(mantissa, exponent);
    uint32_t stored = 0;
    storeFromDouble(f.type, value, &stored, 0);
    ASSERT_EQ(stored, referenceEncode(f, value)) << f.name << " value " << value;
  }
}

}  // namespace
}  // namespace weft::algorithms
