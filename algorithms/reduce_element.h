#pragma once
// The arithmetic of one data type over a vector of its elements, as the reduction kernels apply
// it: `p` holds the peer's elements, `l` the local ones, in the type's own encoding (Raw). Each
// family gives sum, prod, max, min, preMulSum (p + l * s) and scale (l * s). The rules are the
// ones reduce.h states.

#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "algorithms/reduce_lanes.h"
#include "algorithms/reduce_narrow_float.h"

namespace weft::algorithms {

/// Wrapping integer arithmetic (computed unsigned), plain comparisons. `kBytes`: vector width.
template <class S, int kBytes>
struct IntegerElement {
  static constexpr int kLanes = kBytes / static_cast<int>(sizeof(S));
  using Raw = Lanes<S, kLanes>;
  using Bits = Lanes<std::make_unsigned_t<S>, kLanes>;
  using Factor = Bits;

  [[gnu::always_inline]] static inline Factor factor(const unsigned char* scalar) {
    std::make_unsigned_t<S> value;
    std::memcpy(&value, scalar, sizeof(value));
    return splat<Bits>(value);
  }
  [[gnu::always_inline]] static inline Raw sum(const Raw& p, const Raw& l) {
    return std::bit_cast<Raw>(std::bit_cast<Bits>(p) + std::bit_cast<Bits>(l));
  }
  [[gnu::always_inline]] static inline Raw prod(const Raw& p, const Raw& l) {
    return std::bit_cast<Raw>(std::bit_cast<Bits>(p) * std::bit_cast<Bits>(l));
  }
  [[gnu::always_inline]] static inline Raw max(const Raw& p, const Raw& l) { return l > p ? l : p; }
  [[gnu::always_inline]] static inline Raw min(const Raw& p, const Raw& l) { return l < p ? l : p; }
  [[gnu::always_inline]] static inline Raw preMulSum(const Raw& p, const Raw& l, const Factor& s) {
    return std::bit_cast<Raw>(std::bit_cast<Bits>(p) + std::bit_cast<Bits>(l) * s);
  }
  [[gnu::always_inline]] static inline Raw scale(const Raw& l, const Factor& s) {
    return std::bit_cast<Raw>(std::bit_cast<Bits>(l) * s);
  }
};

/// Integer keys that order floating values (bit patterns in signed lanes of their width) the way
/// max and min need: sign-magnitude becomes two's complement, so -0 sits just below +0, and NaN
/// gets the key that always loses (lowest for max, highest for min). Keeping `l` when its key is
/// at least (max) or at most (min) the key of `p` ignores a NaN unless both are NaN (then `l` is
/// kept); otherwise the result does not depend on the operand order.
template <class Signed, bool kForMax>
[[gnu::always_inline]] inline Signed orderKey(const Signed& bits) {
  using Element = LaneElement<Signed>;
  constexpr Element kMagnitudeMask = std::numeric_limits<Element>::max();
  constexpr Element kInfinity =
      sizeof(Element) == 4 ? Element{0x7F800000} : static_cast<Element>(0x7FF0000000000000);
  constexpr Element kNanKey =
      kForMax ? std::numeric_limits<Element>::min() : std::numeric_limits<Element>::max();
  constexpr int kSignShift = static_cast<int>(sizeof(Element)) * 8 - 1;
  const Signed key = bits ^ ((bits >> kSignShift) & kMagnitudeMask);
  return (bits & kMagnitudeMask) > kInfinity ? splat<Signed>(kNanKey) : key;
}

/// float and double: IEEE arithmetic in the type itself, each operation rounded once (the kernel
/// files are compiled without contraction into fused multiply-add).
template <class F, int kBytes>
struct FloatElement {
  static constexpr int kLanes = kBytes / static_cast<int>(sizeof(F));
  using Raw = Lanes<F, kLanes>;
  using Signed = Lanes<std::conditional_t<sizeof(F) == 4, int32_t, int64_t>, kLanes>;
  using Factor = Raw;

  [[gnu::always_inline]] static inline Factor factor(const unsigned char* scalar) {
    F value;
    std::memcpy(&value, scalar, sizeof(value));
    return splat<Raw>(value);
  }
  [[gnu::always_inline]] static inline Raw sum(const Raw& p, const Raw& l) { return p + l; }
  [[gnu::always_inline]] static inline Raw prod(const Raw& p, const Raw& l) { return p * l; }
  [[gnu::always_inline]] static inline Raw max(const Raw& p, const Raw& l) {
    const Signed lKey = orderKey<Signed, true>(std::bit_cast<Signed>(l));
    return lKey >= orderKey<Signed, true>(std::bit_cast<Signed>(p)) ? l : p;
  }
  [[gnu::always_inline]] static inline Raw min(const Raw& p, const Raw& l) {
    const Signed lKey = orderKey<Signed, false>(std::bit_cast<Signed>(l));
    return lKey <= orderKey<Signed, false>(std::bit_cast<Signed>(p)) ? l : p;
  }
  [[gnu::always_inline]] static inline Raw preMulSum(const Raw& p, const Raw& l, const Factor& s) {
    return p + l * s;
  }
  [[gnu::always_inline]] static inline Raw scale(const Raw& l, const Factor& s) { return l * s; }
};

/// Half, bfloat16, fp8: each operation computed in float and rounded back to the format; max and
/// min pick one of the two codes unchanged. `kBytes` is the width of the float vectors.
template <class Format, int kBytes>
struct NarrowElement {
  static constexpr int kLanes = kBytes / static_cast<int>(sizeof(float));
  using Raw = Lanes<typename Format::Storage, kLanes>;
  using Codes = CodeLanes<kLanes>;
  using Reals = RealLanes<kLanes>;
  using Signed = Lanes<int32_t, kLanes>;
  using Factor = Reals;

  [[gnu::always_inline]] static inline Reals decode(const Raw& v) {
    return Format::template toFloat<kLanes>(convertLanes<Codes>(v));
  }
  [[gnu::always_inline]] static inline Raw encode(const Reals& v) {
    return convertLanes<Raw>(Format::template fromFloat<kLanes>(v));
  }
  [[gnu::always_inline]] static inline Factor factor(const unsigned char* scalar) {
    typename Format::Storage code;
    std::memcpy(&code, scalar, sizeof(code));
    return splat<Reals>(Format::template toFloat<1>(code));
  }
  [[gnu::always_inline]] static inline Raw sum(const Raw& p, const Raw& l) {
    return encode(decode(p) + decode(l));
  }
  [[gnu::always_inline]] static inline Raw prod(const Raw& p, const Raw& l) {
    return encode(decode(p) * decode(l));
  }
  [[gnu::always_inline]] static inline Raw max(const Raw& p, const Raw& l) {
    const Signed lKey = orderKey<Signed, true>(std::bit_cast<Signed>(decode(l)));
    const Signed pKey = orderKey<Signed, true>(std::bit_cast<Signed>(decode(p)));
    return convertLanes<Raw>(lKey >= pKey ? convertLanes<Codes>(l) : convertLanes<Codes>(p));
  }
  [[gnu::always_inline]] static inline Raw min(const Raw& p, const Raw& l) {
    const Signed lKey = orderKey<Signed, false>(std::bit_cast<Signed>(decode(l)));
    const Signed pKey = orderKey<Signed, false>(std::bit_cast<Signed>(decode(p)));
    return convertLanes<Raw>(lKey <= pKey ? convertLanes<Codes>(l) : convertLanes<Codes>(p));
  }
  [[gnu::always_inline]] static inline Raw preMulSum(const Raw& p, const Raw& l, const Factor& s) {
    // Two roundings, as hardware computing in the narrow type does: the scaled input is a value
    // of the format before it is added.
    return encode(decode(p) + decode(encode(decode(l) * s)));
  }
  [[gnu::always_inline]] static inline Raw scale(const Raw& l, const Factor& s) {
    return encode(decode(l) * s);
  }
};

}  // namespace weft::algorithms
