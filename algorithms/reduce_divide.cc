#include "algorithms/reduce_divide.h"

#include <cstring>
#include <type_traits>

namespace weft::algorithms {
namespace {

// Division of magnitudes below 2^32 by a divisor d in [2, 2^32) as a multiplication: with
// c = ceil(2^64 / d), floor(n / d) is the high 64 bits of c * n (Lemire, Kaser and Kurz, "Faster
// remainder by direct computation", 2019). Several times faster than a 64-bit divide instruction.
__extension__ using Uint128 = unsigned __int128;

struct SmallDivisor {
  uint64_t reciprocal;
  uint64_t divide(uint64_t magnitude) const {
    return static_cast<uint64_t>((static_cast<Uint128>(reciprocal) * magnitude) >> 64);
  }
};

struct AnyDivisor {
  uint64_t divisor;
  uint64_t divide(uint64_t magnitude) const { return magnitude / divisor; }
};

template <class T, class Divider>
void divideAll(unsigned char* bytes, size_t count, Divider divider) {
  for (size_t i = 0; i < count; ++i) {
    T value;
    std::memcpy(&value, bytes + i * sizeof(T), sizeof(T));
    if constexpr (std::is_unsigned_v<T>) {
      value = static_cast<T>(divider.divide(value));
    } else {
      // Through the magnitude, INT64_MIN and divisors above INT64_MAX stay well defined, and the
      // quotient truncates toward zero.
      const int64_t wide = value;
      const uint64_t magnitude =
          wide < 0 ? uint64_t{0} - static_cast<uint64_t>(wide) : static_cast<uint64_t>(wide);
      const uint64_t quotient = divider.divide(magnitude);
      value = static_cast<T>(wide < 0 ? uint64_t{0} - quotient : quotient);
    }
    std::memcpy(bytes + i * sizeof(T), &value, sizeof(T));
  }
}

template <class T>
void divideAll(void* data, size_t count, uint64_t divisor) {
  auto* bytes = static_cast<unsigned char*>(data);
  if (sizeof(T) <= 4 && divisor <= 0xFFFFFFFFu) {
    divideAll<T>(bytes, count, SmallDivisor{~uint64_t{0} / divisor + 1});
  } else {
    divideAll<T>(bytes, count, AnyDivisor{divisor});
  }
}

}  // namespace

void divideIntegers(DataType type, void* data, size_t count, uint64_t divisor) {
  if (divisor <= 1) return;
  switch (type) {
    case DataType::kInt8: return divideAll<int8_t>(data, count, divisor);
    case DataType::kUint8: return divideAll<uint8_t>(data, count, divisor);
    case DataType::kInt32: return divideAll<int32_t>(data, count, divisor);
    case DataType::kUint32: return divideAll<uint32_t>(data, count, divisor);
    case DataType::kInt64: return divideAll<int64_t>(data, count, divisor);
    case DataType::kUint64: return divideAll<uint64_t>(data, count, divisor);
    default: return;
  }
}

}  // namespace weft::algorithms
