#pragma once
// The 12 NCCL data types as the suite sees them: size, kind, precision, and type-erased access to
// elements of a buffer as raw bits (zero-extended to 64).

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "nccl.h"

namespace weft::multirank {

enum class ElementKind { kSigned, kUnsigned, kFloat };

struct ElementType {
  ncclDataType_t type;
  const char* name;  // "int8", "bfloat16", "float8e4m3", ...
  size_t size;
  ElementKind kind;
  /// Floats: significand bits including the implicit one; every integer of magnitude up to
  /// 2^precision is exact (fp8 e5m2: 8, e4m3: 16, half: 2048, bfloat16: 256). 0 for integers.
  int precision;

  bool isFloat() const { return kind == ElementKind::kFloat; }
};

/// All 12 types, in ncclDataType_t order.
std::span<const ElementType> allElementTypes();
const ElementType& elementType(ncclDataType_t type);

uint64_t loadBits(const ElementType& type, const void* buffer, size_t index);
void storeBits(const ElementType& type, void* buffer, size_t index, uint64_t bits);

/// Floats: the exact value (NaN, infinities included). Integers: the signed or unsigned value.
double bitsToDouble(const ElementType& type, uint64_t bits);
/// Floats: rounded to nearest even (fp8 saturates). Integers: truncated toward zero, then wrapped
/// to the width.
uint64_t doubleToBits(const ElementType& type, double value);

/// "-3 (0xfd)", "0.5 (0x3800)".
std::string formatBits(const ElementType& type, uint64_t bits);

/// Floats: how many representable values lie between a and b (0 when equal, -0 equals +0);
/// UINT64_MAX when either is NaN. Integers: 0 when equal, else UINT64_MAX.
uint64_t ulpDistance(const ElementType& type, uint64_t a, uint64_t b);

}  // namespace weft::multirank
