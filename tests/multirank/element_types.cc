#include "tests/multirank/element_types.h"

#include <bit>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>

#include "tests/multirank/float_formats.h"

namespace weft::multirank {
namespace {

constexpr ElementType kTypes[] = {
    {ncclInt8, "int8", 1, ElementKind::kSigned, 0},
    {ncclUint8, "uint8", 1, ElementKind::kUnsigned, 0},
    {ncclInt32, "int32", 4, ElementKind::kSigned, 0},
    {ncclUint32, "uint32", 4, ElementKind::kUnsigned, 0},
    {ncclInt64, "int64", 8, ElementKind::kSigned, 0},
    {ncclUint64, "uint64", 8, ElementKind::kUnsigned, 0},
    {ncclFloat16, "float16", 2, ElementKind::kFloat, 11},
    {ncclFloat32, "float32", 4, ElementKind::kFloat, 24},
    {ncclFloat64, "float64", 8, ElementKind::kFloat, 53},
    {ncclBfloat16, "bfloat16", 2, ElementKind::kFloat, 8},
    {ncclFloat8e4m3, "float8e4m3", 1, ElementKind::kFloat, 4},
    {ncclFloat8e5m2, "float8e5m2", 1, ElementKind::kFloat, 3},
};
static_assert(std::size(kTypes) == static_cast<size_t>(ncclNumTypes));

uint64_t widthMask(const ElementType& type) {
  return type.size == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * type.size)) - 1;
}

int64_t signExtend(const ElementType& type, uint64_t bits) {
  const int shift = 64 - 8 * static_cast<int>(type.size);
  return static_cast<int64_t>(bits << shift) >> shift;
}

SmallFloat smallFormatOf(ncclDataType_t type) {
  switch (type) {
    case ncclFloat16: return SmallFloat::kHalf;
    case ncclBfloat16: return SmallFloat::kBfloat16;
    case ncclFloat8e4m3: return SmallFloat::kE4m3;
    default: return SmallFloat::kE5m2;
  }
}

}  // namespace

std::span<const ElementType> allElementTypes() { return kTypes; }

const ElementType& elementType(ncclDataType_t type) {
  int index = static_cast<int>(type);
  if (index < 0 || index >= ncclNumTypes) {
    std::fprintf(stderr, "elementType: %d is not an ncclDataType_t\n", index);
    std::abort();
  }
  return kTypes[index];
}

uint64_t loadBits(const ElementType& type, const void* buffer, size_t index) {
  uint64_t bits = 0;
  // Little-endian: the low bytes of `bits` are the element.
  std::memcpy(&bits, static_cast<const char*>(buffer) + index * type.size, type.size);
  return bits;
}

void storeBits(const ElementType& type, void* buffer, size_t index, uint64_t bits) {
  std::memcpy(static_cast<char*>(buffer) + index * type.size, &bits, type.size);
}

double bitsToDouble(const ElementType& type, uint64_t bits) {
  bits &= widthMask(type);
  switch (type.kind) {
    case ElementKind::kSigned: return static_cast<double>(signExtend(type, bits));
    case ElementKind::kUnsigned: return static_cast<double>(bits);
    case ElementKind::kFloat: break;
  }
  if (type.type == ncclFloat32) return std::bit_cast<float>(static_cast<uint32_t>(bits));
  if (type.type == ncclFloat64) return std::bit_cast<double>(bits);
  return decodeSmallFloat(smallFormatOf(type.type), static_cast<uint32_t>(bits));
}

uint64_t doubleToBits(const ElementType& type, double value) {
  switch (type.kind) {
    case ElementKind::kSigned:
      return static_cast<uint64_t>(static_cast<int64_t>(value)) & widthMask(type);
    case ElementKind::kUnsigned:
      return (value < 0 ? static_cast<uint64_t>(static_cast<int64_t>(value))
                        : static_cast<uint64_t>(value)) &
             widthMask(type);
    case ElementKind::kFloat: break;
  }
  if (type.type == ncclFloat32) return std::bit_cast<uint32_t>(static_cast<float>(value));
  if (type.type == ncclFloat64) return std::bit_cast<uint64_t>(value);
  return encodeSmallFloat(smallFormatOf(type.type), value);
}

std::string formatBits(const ElementType& type, uint64_t bits) {
  bits &= widthMask(type);
  char text[96];
  switch (type.kind) {
    case ElementKind::kSigned:
      std::snprintf(text, sizeof(text), "%" PRId64 " (0x%" PRIx64 ")", signExtend(type, bits), bits);
      break;
    case ElementKind::kUnsigned:
      std::snprintf(text, sizeof(text), "%" PRIu64 " (0x%" PRIx64 ")", bits, bits);
      break;
    case ElementKind::kFloat:
      std::snprintf(text, sizeof(text), "%.17g (0x%0*" PRIx64 ")", bitsToDouble(type, bits),
                    static_cast<int>(2 * type.size), bits);
      break;
  }
  return text;
}

uint64_t ulpDistance(const ElementType& type, uint64_t a, uint64_t b) {
  a &= widthMask(type);
  b &= widthMask(type);
  if (a == b) return 0;
  if (!type.isFloat()) return std::numeric_limits<uint64_t>::max();
  if (std::isnan(bitsToDouble(type, a)) || std::isnan(bitsToDouble(type, b))) {
    return std::numeric_limits<uint64_t>::max();
  }
  // Sign-magnitude to a line on which neighbouring values are neighbouring integers.
  const uint64_t signBit = uint64_t{1} << (8 * type.size - 1);
  auto ordinal = [signBit](uint64_t bits) -> int64_t {
    int64_t magnitude = static_cast<int64_t>(bits & (signBit - 1));
    return (bits & signBit) != 0 ? -magnitude : magnitude;
  };
  int64_t oa = ordinal(a);
  int64_t ob = ordinal(b);
  // For float64 both ordinals fit in 63 bits, so the difference of two finite values fits in 64.
  return oa > ob ? static_cast<uint64_t>(oa) - static_cast<uint64_t>(ob)
                 : static_cast<uint64_t>(ob) - static_cast<uint64_t>(oa);
}

}  // namespace weft::multirank
