#include "algorithms/datatype.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>

namespace weft::algorithms {
namespace {

constexpr DataType kAllTypes[] = {
    DataType::kInt8,    DataType::kUint8,    DataType::kInt32,      DataType::kUint32,
    DataType::kInt64,   DataType::kUint64,   DataType::kFloat16,    DataType::kFloat32,
    DataType::kFloat64, DataType::kBfloat16, DataType::kFloat8e4m3, DataType::kFloat8e5m2,
};

template <class T>
T scalarAs(const Reduction& reduction) {
  T value;
  std::memcpy(&value, reduction.scalar, sizeof(T));
  return value;
}

TEST(DataType, SizesNamesAndKindsFollowNccl) {
  const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  const char* names[] = {"int8", "uint8", "int32",  "uint32",   "int64",  "uint64",
                         "half", "float", "double", "bfloat16", "f8e4m3", "f8e5m2"};
  const bool floating[] = {false, false, false, false, false, false,
                           true,  true,  true,  true,  true,  true};
  static_assert(std::size(kAllTypes) == kNumDataTypes);
  for (int i = 0; i < kNumDataTypes; ++i) {
    EXPECT_EQ(static_cast<int>(kAllTypes[i]), i);
    EXPECT_EQ(dataTypeSize(kAllTypes[i]), sizes[i]) << names[i];
    EXPECT_EQ(std::string(dataTypeName(kAllTypes[i])), names[i]);
    EXPECT_EQ(isFloatingPoint(kAllTypes[i]), floating[i]) << names[i];
  }
}

TEST(DataType, ValuesOutsideTheEnumAreUnknown) {
  const auto outside = static_cast<DataType>(kNumDataTypes);
  EXPECT_EQ(dataTypeSize(outside), 0u);
  EXPECT_EQ(std::string(dataTypeName(outside)), "unknown");
  EXPECT_FALSE(isFloatingPoint(outside));
  EXPECT_EQ(dataTypeSize(static_cast<DataType>(-1)), 0u);
}

TEST(Reduction, BuiltinOpsMapToTheirKinds) {
  const RedOpKind kinds[] = {RedOpKind::kSum, RedOpKind::kProd, RedOpKind::kMax, RedOpKind::kMin};
  for (DataType type : kAllTypes) {
    for (int op = 0; op < 4; ++op) {
      Reduction reduction = makeBuiltinReduction(type, op, 5);
      EXPECT_EQ(reduction.type, type);
      EXPECT_EQ(reduction.kind, kinds[op]) << dataTypeName(type) << " op " << op;
      EXPECT_EQ(reduction.divisor, 1u) << dataTypeName(type) << " op " << op;
    }
  }
}

TEST(Reduction, IntegerAverageIsSumThenDivision) {
  for (DataType type : {DataType::kInt8, DataType::kUint8, DataType::kInt32, DataType::kUint32,
                        DataType::kInt64, DataType::kUint64}) {
    Reduction reduction = makeBuiltinReduction(type, 4, 6);
    EXPECT_EQ(reduction.kind, RedOpKind::kSum) << dataTypeName(type);
    EXPECT_EQ(reduction.divisor, 6u) << dataTypeName(type);
  }
  EXPECT_EQ(makeBuiltinReduction(DataType::kInt32, 4, 1).divisor, 1u);
}

TEST(Reduction, FloatingAverageScalesByTheRoundedReciprocal) {
  const Reduction f32 = makeBuiltinReduction(DataType::kFloat32, 4, 3);
  EXPECT_EQ(f32.kind, RedOpKind::kPreMulSum);
  EXPECT_EQ(f32.divisor, 1u);
  EXPECT_EQ(scalarAs<float>(f32), static_cast<float>(1.0 / 3));
  EXPECT_EQ(scalarAs<double>(makeBuiltinReduction(DataType::kFloat64, 4, 3)), 1.0 / 3);
  EXPECT_EQ(scalarAs<double>(makeBuiltinReduction(DataType::kFloat64, 4, 7)), 1.0 / 7);
  // 1/3 in half: 0x3555 (0.33325); bfloat16: 0x3EAB; e4m3: 1.375 * 2^-2; e5m2: 1.25 * 2^-2.
  EXPECT_EQ(scalarAs<uint16_t>(makeBuiltinReduction(DataType::kFloat16, 4, 3)), 0x3555);
  EXPECT_EQ(scalarAs<uint16_t>(makeBuiltinReduction(DataType::kBfloat16, 4, 3)), 0x3EAB);
  EXPECT_EQ(scalarAs<uint8_t>(makeBuiltinReduction(DataType::kFloat8e4m3, 4, 3)), 0x2B);
  EXPECT_EQ(scalarAs<uint8_t>(makeBuiltinReduction(DataType::kFloat8e5m2, 4, 3)), 0x35);
  // Powers of two are exact; one rank multiplies by exactly 1.
  EXPECT_EQ(scalarAs<uint16_t>(makeBuiltinReduction(DataType::kFloat16, 4, 8)), 0x3000);
  EXPECT_EQ(scalarAs<uint16_t>(makeBuiltinReduction(DataType::kFloat16, 4, 1)), 0x3C00);
  EXPECT_EQ(scalarAs<float>(makeBuiltinReduction(DataType::kFloat32, 4, 1)), 1.0f);
  EXPECT_EQ(scalarAs<uint8_t>(makeBuiltinReduction(DataType::kFloat8e4m3, 4, 1)), 0x38);
  // The unused bytes of the scalar stay zero.
  const Reduction half = makeBuiltinReduction(DataType::kFloat16, 4, 3);
  for (int i = 2; i < 8; ++i) EXPECT_EQ(half.scalar[i], 0) << "byte " << i;
}

TEST(Reduction, PreMulSumKeepsTheScalarBytes) {
  const double scalar = -0.375;
  const Reduction f64 = makePreMulSum(DataType::kFloat64, &scalar);
  EXPECT_EQ(f64.kind, RedOpKind::kPreMulSum);
  EXPECT_EQ(f64.type, DataType::kFloat64);
  EXPECT_EQ(scalarAs<double>(f64), -0.375);
  const uint16_t halfScalar = 0xBC00;
  const Reduction f16 = makePreMulSum(DataType::kFloat16, &halfScalar);
  EXPECT_EQ(scalarAs<uint16_t>(f16), 0xBC00);
  for (int i = 2; i < 8; ++i) EXPECT_EQ(f16.scalar[i], 0) << "byte " << i;
  const int8_t intScalar = -3;
  EXPECT_EQ(scalarAs<int8_t>(makePreMulSum(DataType::kInt8, &intScalar)), -3);
}

}  // namespace
}  // namespace weft::algorithms
