#include "tests/multirank/test_inputs.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "tests/multirank/typed_values.h"

namespace weft::multirank {
namespace {

// A value in [0, choices) from 64 random bits, without a division.
uint64_t below(uint64_t bits, uint64_t choices) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(bits) * choices) >> 64);
}

uint64_t finalize(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The largest |k| of a float sum input: nranks * k stays within the exact integers. Capped so
// that float64 inputs stay readable in messages.
int64_t sumInputBound(const ElementType& type, int nranks) {
  const int exponent = std::min(type.precision, 30);
  return std::max<int64_t>(1, (int64_t{1} << exponent) / nranks);
}

template <typename R>
void fillFloatInput(const ElementType& type, const Reduction& op, int nranks, int rank,
                    uint64_t seed, size_t first, size_t count, typename R::Storage* out) {
  using S = typename R::Storage;
  if (op.adds()) {
    const int64_t bound = sumInputBound(type, nranks);
    // avg's premultiplied inputs are rounded when nranks is not a power of two; with mixed signs
    // a sum that nearly cancels would turn those roundings into many ulps of a tiny result.
    const int64_t lowest = op.kind == ReduceKind::kAvg ? 0 : -bound;
    const uint64_t choices = static_cast<uint64_t>(bound - lowest + 1);
    if constexpr (sizeof(S) <= 2) {
      // Encoding a small format is slow, and it has at most 4097 such values: encode each once.
      std::vector<S> encoded(choices);
      for (int64_t k = lowest; k <= bound; ++k) encoded[k - lowest] = R::encode(static_cast<double>(k));
      for (size_t i = 0; i < count; ++i) out[i] = encoded[below(mixBits(seed, rank, first + i), choices)];
    } else {
      for (size_t i = 0; i < count; ++i) {
        const int64_t k = static_cast<int64_t>(below(mixBits(seed, rank, first + i), choices)) + lowest;
        out[i] = R::encode(static_cast<double>(k));
      }
    }
    return;
  }
  if (op.kind == ReduceKind::kProd) {
    const S factors[4] = {R::encode(-2.0), R::encode(-1.0), R::encode(1.0), R::encode(2.0)};
    for (size_t i = 0; i < count; ++i) out[i] = factors[mixBits(seed, rank, first + i) & 3];
    return;
  }
  for (size_t i = 0; i < count; ++i) {
    uint64_t bits = mixBits(seed, rank, first + i);
    for (;;) {
      S value;
      std::memcpy(&value, &bits, sizeof(S));
      auto decoded = R::decode(value);
      if (std::isfinite(decoded) && !(decoded == 0 && std::signbit(decoded))) {
        out[i] = value;
        break;
      }
      bits = finalize(bits + 1);
    }
  }
}

}  // namespace

uint64_t mixBits(uint64_t seed, uint64_t a, uint64_t b) {
  return finalize(finalize(seed + 0x9e3779b97f4a7c15ULL * (a + 1)) ^ (b * 0xd1b54a32d192ed03ULL));
}

void fillReductionInput(const ElementType& type, const Reduction& op, int nranks, int rank,
                        uint64_t seed, size_t first, size_t count, void* out) {
  visitElementType(type.type, [&](auto repr) {
    using R = decltype(repr);
    if constexpr (R::kIsFloat) {
      fillFloatInput<R>(type, op, nranks, rank, seed, first, count,
                        static_cast<typename R::Storage*>(out));
    } else {
      fillArbitraryInput(type, rank, seed, first, count, out);
    }
  });
}

void fillArbitraryInput(const ElementType& type, int rank, uint64_t seed, size_t first,
                        size_t count, void* out) {
  char* bytes = static_cast<char*>(out);
  for (size_t i = 0; i < count; ++i) {
    uint64_t bits = mixBits(seed, rank, first + i);
    std::memcpy(bytes + i * type.size, &bits, type.size);
  }
}

}  // namespace weft::multirank
