#pragma once
// Lanes: a fixed group of elements processed together, as a GCC vector (N > 1) or a plain scalar
// (N == 1). The same element code, written once over Lanes, serves the vector kernels and the
// scalar conversion functions, so both round identically. Every helper is always inlined: the
// kernels compile it for the instruction set of the function that uses it, and no vector ever
// crosses a call boundary.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__x86_64__)
#include <immintrin.h>  // declares the ia32 builtins of every instruction set
#endif

namespace weft::algorithms {

template <class T, int N>
struct LanesOf {
  typedef T type __attribute__((vector_size(sizeof(T) * N)));
};
template <class T>
struct LanesOf<T, 1> {
  using type = T;
};
/// N elements of T: a GCC vector, or T itself when N == 1.
template <class T, int N>
using Lanes = typename LanesOf<T, N>::type;

template <class V>
struct LaneElementOf {
  using type = std::remove_cvref_t<decltype(std::declval<V>()[0])>;
};
template <class V>
requires std::is_arithmetic_v<V>
struct LaneElementOf<V> {
  using type = V;
};
template <class V>
using LaneElement = typename LaneElementOf<V>::type;

/// Every lane set to `value`.
template <class V, class S>
[[gnu::always_inline]] inline V splat(S value) {
  return V{} + static_cast<LaneElement<V>>(value);
}

/// Lane-wise value conversion (as static_cast does per element).
template <class To, class From>
[[gnu::always_inline]] inline To convertLanes(const From& value) {
  if constexpr (std::is_arithmetic_v<From>) {
    return static_cast<To>(value);
  } else {
    using FromElement = LaneElement<From>;
    using ToElement = LaneElement<To>;
    constexpr bool kBytesAndWords = std::is_integral_v<FromElement> &&
                                    std::is_integral_v<ToElement> &&
                                    (sizeof(FromElement) * 4 == sizeof(ToElement) ||
                                     sizeof(ToElement) * 4 == sizeof(FromElement));
    if constexpr (kBytesAndWords) {
      // GCC turns a direct 8 <-> 32-bit conversion into per-lane code; two halving or doubling
      // steps map to vector unpacks and packs.
      using MiddleElement = std::conditional_t<std::is_signed_v<FromElement>, int16_t, uint16_t>;
      using Middle = Lanes<MiddleElement, sizeof(From) / sizeof(FromElement)>;
      return __builtin_convertvector(__builtin_convertvector(value, Middle), To);
    } else {
      return __builtin_convertvector(value, To);
    }
  }
}

/// Reads sizeof(V) bytes from any address (no alignment needed).
template <class V>
[[gnu::always_inline]] inline V loadLanes(const unsigned char* source) {
  V value;
  std::memcpy(&value, source, sizeof(V));
  return value;
}

template <class V>
[[gnu::always_inline]] inline void storeLanes(unsigned char* destination, const V& value) {
  std::memcpy(destination, &value, sizeof(V));
}

/// Whether streamLanes can write V without the caches on this target (x86-64, 16, 32 or 64 bytes).
template <class V>
constexpr bool kCanStreamLanes =
#if defined(__x86_64__)
    sizeof(V) == 16 || sizeof(V) == 32 || sizeof(V) == 64;
#else
    false;
#endif

/// A non-temporal store of `value` to `destination`, which must be aligned to sizeof(V); only
/// where kCanStreamLanes<V>. The builtins expand in the kernel function this is inlined into,
/// which is compiled for the instruction set they need.
template <class V>
[[gnu::always_inline]] inline void streamLanes(unsigned char* destination, const V& value) {
#if defined(__x86_64__)
  typedef long long Words16 __attribute__((vector_size(16)));
  typedef long long Words32 __attribute__((vector_size(32)));
  typedef long long Words64 __attribute__((vector_size(64)));
  if constexpr (sizeof(V) == 64) {
    __builtin_ia32_movntdq512(reinterpret_cast<Words64*>(destination), std::bit_cast<Words64>(value));
  } else if constexpr (sizeof(V) == 32) {
    __builtin_ia32_movntdq256(reinterpret_cast<Words32*>(destination), std::bit_cast<Words32>(value));
  } else if constexpr (sizeof(V) == 16) {
    __builtin_ia32_movntdq(reinterpret_cast<Words16*>(destination), std::bit_cast<Words16>(value));
  }
#else
  storeLanes(destination, value);
#endif
}

}  // namespace weft::algorithms
