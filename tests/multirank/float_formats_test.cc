// The suite's own half/bfloat16/fp8 conversions, which every reduction reference relies on.

#include "tests/multirank/float_formats.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>

#include "tests/multirank/test_inputs.h"

namespace weft::multirank {
namespace {

struct FormatCase {
  SmallFloat format;
  const char* name;
  int bits;
};

constexpr FormatCase kFormats[] = {
    {SmallFloat::kHalf, "half", 16},
    {SmallFloat::kBfloat16, "bfloat16", 16},
    {SmallFloat::kE4m3, "e4m3", 8},
    {SmallFloat::kE5m2, "e5m2", 8},
};

TEST(FloatFormats, EveryCodeSurvivesDecodeThenEncode) {
  for (const FormatCase& format : kFormats) {
    for (uint32_t code = 0; code < (1u << format.bits); ++code) {
      const float value = decodeSmallFloat(format.format, code);
      if (std::isnan(value)) continue;
      if (std::isinf(value) && format.format == SmallFloat::kE5m2) {
        // fp8 conversions saturate: infinity becomes the largest finite magnitude.
        ASSERT_EQ(encodeSmallFloat(format.format, value), (code & 0x80u) | 0x7bu) << "code " << code;
        continue;
      }
      ASSERT_EQ(encodeSmallFloat(format.format, value), code) << format.name << " code " << code;
    }
  }
}

TEST(FloatFormats, KnownValues) {
  EXPECT_EQ(encodeSmallFloat(SmallFloat::kHalf, 1.0 / 3), 0x3555u);
  EXPECT_EQ(encodeSmallFloat(SmallFloat::kBfloat16, 1.0 / 3), 0x3eabu);
  EXPECT_EQ(encodeSmallFloat(SmallFloat::kE4m3, 1.0 / 3), 0x2bu);  // 0.34375
  EXPECT_EQ(encodeSmallFloat(SmallFloat::kE5m2, 1.0 / 3), 0x35u);  // 0.3125
  EXPECT_EQ(decodeSmallFloat(SmallFloat::kE4m3, 0x7e), 448.0f);
  EXPECT_EQ(decodeSmallFloat(SmallFloat::kE5m2, 0x7b), 57344.0f);
  EXPECT_TRUE(std::isnan(decodeSmallFloat(SmallFloat::kE4m3, 0x7f)));
  EXPECT_TRUE(std::isinf(decodeSmallFloat(SmallFloat::kE5m2, 0x7c)));
  EXPECT_EQ(decodeSmallFloat(SmallFloat::kE4m3, 0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(decodeSmallFloat(SmallFloat::kE5m2, 0x01), std::ldexp(1.0f, -16));
  EXPECT_EQ(decodeSmallFloat(SmallFloat::kHalf, 0x0001), std::ldexp(1.0f, -24));
}

TEST(FloatFormats, RoundsTiesToEven) {
  EXPECT_EQ(encodeSmallFloat(SmallFloat::kBfloat16, 1.0 + std::ldexp(1.0, -8)), 0x3f80u);
  EXPECT_EQ(encodeSmallFloat(SmallFloat::kBfloat16, 1.0 + 3 * std::ldexp(1.0, -8)), 0x3f82u);
  EXPECT_EQ(encodeSmallFloat(SmallFloat::kHalf, std::ldexp(1.0, -25)), 0x0000u);
  EXPECT_EQ(encodeSmallFloat(SmallFloat::kHalf, 3 * std::ldexp(1.0, -26)), 0x0001u);
  EXPECT_EQ(encodeSmallFloat(SmallFloat::kE4m3, 17.0), 0x58u);  // tie between 16 and 18: 16
  EXPECT_EQ(encodeSmallFloat(SmallFloat::kE4m3, 19.0), 0x5au);  // tie between 18 and 20: 20
}

TEST(FloatFormats, OverflowSaturatesFp8AndIsInfiniteOtherwise) {
  EXPECT_EQ(encodeSmallFloat(SmallFloat::kHalf, 65519.0), 0x7bffu);
  EXPECT_EQ(encodeSmallFloat(SmallFloat::kHalf, 65520.0), 0x7c00u);
  EXPECT_EQ(encodeSmallFloat(SmallFloat::kBfloat16, -1e39), 0xff80u);
  EXPECT_EQ(encodeSmallFloat(SmallFloat::kE4m3, 480.0), 0x7eu);
  EXPECT_EQ(encodeSmallFloat(SmallFloat::kE4m3, -1e6), 0xfeu);
  EXPECT_EQ(encodeSmallFloat(SmallFloat::kE5m2, 1e6), 0x7bu);
  EXPECT_EQ(encodeSmallFloat(SmallFloat::kE5m2, INFINITY), 0x7bu);
  EXPECT_TRUE(std::isnan(decodeSmallFloat(SmallFloat::kE4m3, encodeSmallFloat(SmallFloat::kE4m3, NAN))));
}

// bfloat16 is the top half of a float: round to nearest even with the usual carry trick, as an
// independent check of the general encoder on a million floats of every magnitude.
TEST(FloatFormats, BfloatMatchesTheTopHalfOfFloatRounded) {
  for (uint64_t i = 0; i < 1000000; ++i) {
    const uint32_t bits = static_cast<uint32_t>(mixBits(17, i, 0));
    const float value = std::bit_cast<float>(bits);
    if (!std::isfinite(value)) continue;
    // A carry out of the largest finite value lands on infinity's bits, as rounding must.
    const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
    ASSERT_EQ(encodeSmallFloat(SmallFloat::kBfloat16, value), rounded) << "float bits " << bits;
    ASSERT_EQ(encodeBfloat16(value), rounded) << "float bits " << bits;
  }
  for (uint32_t code = 0; code < 0x10000; ++code) {
    const float fast = decodeBfloat16(static_cast<uint16_t>(code));
    const float general = decodeSmallFloat(SmallFloat::kBfloat16, code);
    if (std::isnan(general)) {
      ASSERT_TRUE(std::isnan(fast)) << "code " << code;
      ASSERT_TRUE(std::isnan(decodeBfloat16(encodeBfloat16(fast)))) << "code " << code;
    } else {
      ASSERT_EQ(std::bit_cast<uint32_t>(fast), std::bit_cast<uint32_t>(general)) << "code " << code;
    }
  }
}

}  // namespace
}  // namespace weft::multirank
