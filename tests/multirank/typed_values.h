#pragma once
// Compile-time views of the 12 types for the suite's hot loops (building inputs and references
// for a million elements): visitElementType calls a generic lambda with one of the Repr tags
// below, so the loop inside is compiled once per type.

#include <cstdint>
#include <type_traits>

#include "nccl.h"
#include "tests/multirank/float_formats.h"

namespace weft::multirank {

/// Integer types: arithmetic wraps (done in the unsigned type of the same width).
template <typename S>
struct IntegerRepr {
  using Storage = S;
  using Unsigned = std::make_unsigned_t<S>;
  static constexpr bool kIsFloat = false;
};

/// float and double: computed in their own type.
template <typename S>
struct NativeFloatRepr {
  using Storage = S;
  using Compute = S;
  static constexpr bool kIsFloat = true;
  static Compute decode(S value) { return value; }
  /// Rounds to nearest even (the default floating-point environment).
  static S encode(double value) { return static_cast<S>(value); }
  static S encodeCompute(Compute value) { return value; }
};

/// half, bfloat16 and fp8: computed in float and rounded to the type after each operation.
template <SmallFloat F, typename S>
struct SmallFloatRepr {
  using Storage = S;
  using Compute = float;
  static constexpr bool kIsFloat = true;
  static Compute decode(S bits) {
    if constexpr (F == SmallFloat::kBfloat16) return decodeBfloat16(bits);
    return decodeSmallFloat(F, bits);
  }
  static S encode(double value) { return static_cast<S>(encodeSmallFloat(F, value)); }
  /// The hot path of the references: a float result rounded to the type.
  static S encodeCompute(float value) {
    if constexpr (F == SmallFloat::kBfloat16) return encodeBfloat16(value);
    return encode(value);
  }
};

template <typename Visitor>
decltype(auto) visitElementType(ncclDataType_t type, Visitor&& visitor) {
  switch (type) {
    case ncclInt8: return visitor(IntegerRepr<int8_t>{});
    case ncclUint8: return visitor(IntegerRepr<uint8_t>{});
    case ncclInt32: return visitor(IntegerRepr<int32_t>{});
    case ncclUint32: return visitor(IntegerRepr<uint32_t>{});
    case ncclInt64: return visitor(IntegerRepr<int64_t>{});
    case ncclUint64: return visitor(IntegerRepr<uint64_t>{});
    case ncclFloat16: return visitor(SmallFloatRepr<SmallFloat::kHalf, uint16_t>{});
    case ncclFloat32: return visitor(NativeFloatRepr<float>{});
    case ncclFloat64: return visitor(NativeFloatRepr<double>{});
    case ncclBfloat16: return visitor(SmallFloatRepr<SmallFloat::kBfloat16, uint16_t>{});
    case ncclFloat8e4m3: return visitor(SmallFloatRepr<SmallFloat::kE4m3, uint8_t>{});
    default: return visitor(SmallFloatRepr<SmallFloat::kE5m2, uint8_t>{});
  }
}

}  // namespace weft::multirank
