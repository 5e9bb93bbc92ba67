#include "perf/common/data_check.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "perf/common/float_formats.h"

namespace weft::perf {
namespace {

// Largest magnitude up to which every integer is exact in the type (or fits it), and how many
// factors of 2 a product may hold before it overflows.
struct TypeBounds {
  uint64_t exactIntegers;
  int maxTwos;
};

TypeBounds boundsOf(ncclDataType_t type) {
  constexpr uint64_t kInt64Max = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  switch (type) {
    case ncclInt8: return {127, 6};
    case ncclUint8: return {255, 7};
    case ncclInt32: return {0x7fffffffull, 30};
    case ncclUint32: return {0xffffffffull, 31};
    case ncclInt64: return {kInt64Max, 62};
    case ncclUint64: return {kInt64Max, 63};
    case ncclFloat16: return {1ull << 11, 15};
    case ncclFloat32: return {1ull << 24, 127};
    case ncclFloat64: return {1ull << 53, 1023};
    case ncclBfloat16: return {1ull << 8, 127};
    case ncclFloat8e4m3: return {16, 8};
    case ncclFloat8e5m2: return {8, 15};
    default: return {1, 0};
  }
}

int64_t preMulScalarValue(int rank) { return 1 + (rank & 1); }

uint64_t mixBits(uint64_t seed, uint64_t index, uint64_t rank) {
  uint64_t x = seed * 0x9e3779b97f4a7c15ull ^ (index + 0x632be59bd9b4e019ull) * 0xbf58476d1ce4e5b9ull ^
               (rank + 1) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  x *= 0xd6e8feb86659fd93ull;
  x ^= x >> 29;
  return x;
}

// The generator of one DataSpec, with its bounds worked out once.
class ValueModel {
 public:
  explicit ValueModel(const DataSpec& spec) : spec_(spec) {
    const TypeInfo& info = typeInfo(spec.type);
    TypeBounds bounds = boundsOf(spec.type);
    floating_ = info.kind == NumberKind::kFloat;
    signedValues_ = info.kind != NumberKind::kUnsignedInteger && spec.op != TestOp::kAvg;
    nranks_ = static_cast<uint64_t>(spec.nranks > 0 ? spec.nranks : 1);
    maxTwos_ = static_cast<uint64_t>(bounds.maxTwos);
    budget_ = bounds.exactIntegers / (spec.op == TestOp::kMulSum ? 2 : 1);
    perRank_ = budget_ / nranks_;
    const bool powerOfTwo = (nranks_ & (nranks_ - 1)) == 0;
    singleContributor_ = floating_ && spec.op == TestOp::kAvg && !powerOfTwo;
  }

  int64_t value(uint64_t index, int rank) const {
    uint64_t h = mixBits(spec_.seed, index, static_cast<uint64_t>(rank));
    uint64_t turn = (index + static_cast<uint64_t>(rank)) % nranks_;
    if (spec_.op == TestOp::kProd) {
      int64_t v = (turn < maxTwos_ && (h & 1)) ? 2 : 1;
      return (floating_ && (h & 2)) ? -v : v;
    }
    uint64_t bits = h >> 2;
    if (singleContributor_) return turn == 0 ? static_cast<int64_t>(bits % (budget_ + 1)) : 0;
    if (perRank_ == 0) return (turn < budget_ && (bits & 1)) ? 1 : 0;
    if (signedValues_) return static_cast<int64_t>(bits % (2 * perRank_ + 1) - perRank_);
    return static_cast<int64_t>(bits % (perRank_ + 1));
  }

  bool floating() const { return floating_; }

 private:
  DataSpec spec_;
  bool floating_ = false;
  bool signedValues_ = false;
  bool singleContributor_ = false;
  uint64_t nranks_ = 1;
  uint64_t maxTwos_ = 0;
  uint64_t budget_ = 0;
  uint64_t perRank_ = 0;
};

void storeInteger(void* buffer, size_t j, size_t size, uint64_t bits) {
  auto* out = static_cast<unsigned char*>(buffer) + j * size;
  switch (size) {
    case 1: { auto v = static_cast<uint8_t>(bits); std::memcpy(out, &v, 1); break; }
    case 2: { auto v = static_cast<uint16_t>(bits); std::memcpy(out, &v, 2); break; }
    case 4: { auto v = static_cast<uint32_t>(bits); std::memcpy(out, &v, 4); break; }
    default: std::memcpy(out, &bits, 8); break;
  }
}

void storeFloating(void* buffer, size_t j, ncclDataType_t type, double value) {
  switch (type) {
    case ncclFloat32: {
      auto v = static_cast<float>(value);
      std::memcpy(static_cast<float*>(buffer) + j, &v, sizeof(v));
      break;
    }
    case ncclFloat64: std::memcpy(static_cast<double*>(buffer) + j, &value, sizeof(value)); break;
    case ncclFloat16: storeInteger(buffer, j, 2, encodeFloat(value, kHalfFormat)); break;
    case ncclBfloat16: storeInteger(buffer, j, 2, encodeFloat(value, kBfloat16Format)); break;
    case ncclFloat8e4m3: storeInteger(buffer, j, 1, encodeFloat(value, kFloat8E4M3Format)); break;
    case ncclFloat8e5m2: storeInteger(buffer, j, 1, encodeFloat(value, kFloat8E5M2Format)); break;
    default: break;
  }
}

void storeValue(void* buffer, size_t j, ncclDataType_t type, int64_t value) {
  const TypeInfo& info = typeInfo(type);
  if (info.kind == NumberKind::kFloat) {
    storeFloating(buffer, j, type, static_cast<double>(value));
  } else {
    storeInteger(buffer, j, info.size, static_cast<uint64_t>(value));
  }
}

uint64_t loadBits(const void* buffer, size_t j, size_t size) {
  const auto* in = static_cast<const unsigned char*>(buffer) + j * size;
  uint64_t bits = 0;
  std::memcpy(&bits, in, size);  // little-endian: the element lands in the low bytes
  return bits;
}

// Distance in units in the last place between two numbers of one floating format of width bits;
// NaN counts as infinitely far.
uint64_t ulpDistance(uint64_t a, uint64_t b, int width) {
  uint64_t signMask = 1ull << (width - 1);
  uint64_t magnitudeMask = signMask - 1;
  uint64_t magnitudeA = a & magnitudeMask;
  uint64_t magnitudeB = b & magnitudeMask;
  if ((a & signMask) == (b & signMask)) {
    return magnitudeA > magnitudeB ? magnitudeA - magnitudeB : magnitudeB - magnitudeA;
  }
  return magnitudeA + magnitudeB;
}

bool isNan(uint64_t bits, ncclDataType_t type) {
  switch (type) {
    case ncclFloat32: { float v; auto b = static_cast<uint32_t>(bits); std::memcpy(&v, &b, 4); return std::isnan(v); }
    case ncclFloat64: { double v; std::memcpy(&v, &bits, 8); return std::isnan(v); }
    case ncclFloat16: return std::isnan(decodeFloat(static_cast<uint32_t>(bits), kHalfFormat));
    case ncclBfloat16: return std::isnan(decodeFloat(static_cast<uint32_t>(bits), kBfloat16Format));
    case ncclFloat8e4m3: return std::isnan(decodeFloat(static_cast<uint32_t>(bits), kFloat8E4M3Format));
    case ncclFloat8e5m2: return std::isnan(decodeFloat(static_cast<uint32_t>(bits), kFloat8E5M2Format));
    default: return false;
  }
}

}  // namespace

void fillInput(void* buffer, size_t count, size_t firstIndex, const DataSpec& spec, int rank) {
  ValueModel model(spec);
  for (size_t j = 0; j < count; ++j) storeValue(buffer, j, spec.type, model.value(firstIndex + j, rank));
}

void fillGathered(void* buffer, size_t block, const DataSpec& spec) {
  const size_t blockBytes = block * typeInfo(spec.type).size;
  for (int r = 0; r < spec.nranks; ++r) {
    const size_t index = block * static_cast<size_t>(r);
    fillInput(static_cast<char*>(buffer) + blockBytes * static_cast<size_t>(r), block, index, spec, r);
  }
}

void fillReduced(void* buffer, size_t count, size_t firstIndex, const DataSpec& spec) {
  ValueModel model(spec);
  const TypeInfo& info = typeInfo(spec.type);
  const int nranks = spec.nranks;
  for (size_t j = 0; j < count; ++j) {
    const uint64_t index = firstIndex + j;
    // Integers: sums and products in wrapping 64-bit arithmetic (the bounds keep them from
    // wrapping the element type); floats: the same integers, exact in double.
    int64_t accumulator = model.value(index, 0);
    if (spec.op == TestOp::kMulSum) accumulator *= preMulScalarValue(0);
    for (int r = 1; r < nranks; ++r) {
      int64_t v = model.value(index, r);
      switch (spec.op) {
        case TestOp::kSum:
        case TestOp::kAvg: accumulator += v; break;
        case TestOp::kMulSum: accumulator += v * preMulScalarValue(r); break;
        case TestOp::kProd:
          accumulator = static_cast<int64_t>(static_cast<uint64_t>(accumulator) * static_cast<uint64_t>(v));
          break;
        case TestOp::kMax: accumulator = v > accumulator ? v : accumulator; break;
        case TestOp::kMin: accumulator = v < accumulator ? v : accumulator; break;
      }
    }
    if (spec.op == TestOp::kAvg) {
      if (info.kind == NumberKind::kFloat) {
        storeFloating(buffer, j, spec.type, static_cast<double>(accumulator) / nranks);
        continue;
      }
      accumulator /= nranks;
    }
    if (info.kind == NumberKind::kFloat && spec.op == TestOp::kProd) {
      // A product of up to 1023 factors of 2 can exceed int64: recompute it in double.
      double product = 1;
      for (int r = 0; r < nranks; ++r) product *= static_cast<double>(model.value(index, r));
      storeFloating(buffer, j, spec.type, product);
      continue;
    }
    storeValue(buffer, j, spec.type, accumulator);
  }
}

int64_t countWrong(const void* actual, const void* expected, size_t count, const DataSpec& spec) {
  const TypeInfo& info = typeInfo(spec.type);
  const bool tolerant = info.kind == NumberKind::kFloat && spec.op == TestOp::kAvg;
  if (!tolerant && std::memcmp(actual, expected, count * info.size) == 0) return 0;
  const uint64_t tolerance = tolerant ? 2 : 0;
  const int width = static_cast<int>(info.size * 8);
  int64_t wrong = 0;
  for (size_t j = 0; j < count; ++j) {
    uint64_t got = loadBits(actual, j, info.size);
    uint64_t want = loadBits(expected, j, info.size);
    if (got == want) continue;
    if (!tolerant || isNan(got, spec.type) || ulpDistance(got, want, width) > tolerance) ++wrong;
  }
  return wrong;
}

void writePreMulScalar(ncclDataType_t type, int rank, void* out) {
  std::memset(out, 0, 8);
  storeValue(out, 0, type, preMulScalarValue(rank));
}

}  // namespace weft::perf
