#include "algorithms/reduce.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "algorithms/datatype.h"
#include "algorithms/float_convert.h"
#include "algorithms/reduce_isa.h"

namespace weft::algorithms {
namespace {

// The reference below works element by element on codes (the raw bits, in a uint64). It shares
// no code with the kernels: integers use uint64 arithmetic masked to the width, floating types
// compute in double and round with storeFromDouble, whose correct rounding from double is tested
// against an ldexp/nearbyint reference in float_convert_test. (Double then the type is the same as
// float then the type for one +, * of two narrow or float values: the extra precision is enough.)

constexpr DataType kAllTypes[] = {
    DataType::kInt8,    DataType::kUint8,    DataType::kInt32,      DataType::kUint32,
    DataType::kInt64,   DataType::kUint64,   DataType::kFloat16,    DataType::kFloat32,
    DataType::kFloat64, DataType::kBfloat16, DataType::kFloat8e4m3, DataType::kFloat8e5m2,
};

bool isSignedInteger(DataType type) {
  return type == DataType::kInt8 || type == DataType::kInt32 || type == DataType::kInt64;
}

uint64_t widthMask(DataType type) {
  const size_t bits = dataTypeSize(type) * 8;
  return bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
}

int64_t signExtend(DataType type, uint64_t code) {
  const size_t bits = dataTypeSize(type) * 8;
  if (bits == 64) return static_cast<int64_t>(code);
  const uint64_t sign = uint64_t{1} << (bits - 1);
  return static_cast<int64_t>((code ^ sign) - sign);
}

uint64_t readCode(DataType type, const void* base, size_t index) {
  uint64_t code = 0;
  const size_t size = dataTypeSize(type);
  std::memcpy(&code, static_cast<const unsigned char*>(base) + index * size, size);
  return code;
}

void writeCode(DataType type, void* base, size_t index, uint64_t code) {
  const size_t size = dataTypeSize(type);
  std::memcpy(static_cast<unsigned char*>(base) + index * size, &code, size);
}

double decodeReal(DataType type, uint64_t code) { return loadAsDouble(type, &code, 0); }

uint64_t encodeReal(DataType type, double value) {
  uint64_t code = 0;
  storeFromDouble(type, value, &code, 0);
  return code;
}

uint64_t maxCode(double p, double l, uint64_t pCode, uint64_t lCode) {
  if (std::isnan(p)) return lCode;
  if (std::isnan(l)) return pCode;
  if (l > p) return lCode;
  if (l < p) return pCode;
  return std::signbit(p) ? lCode : pCode;  // +0 above -0
}

uint64_t minCode(double p, double l, uint64_t pCode, uint64_t lCode) {
  if (std::isnan(p)) return lCode;
  if (std::isnan(l)) return pCode;
  if (l < p) return lCode;
  if (l > p) return pCode;
  return std::signbit(l) ? lCode : pCode;  // -0 below +0
}

uint64_t referenceInteger(const Reduction& r, uint64_t l, const uint64_t* p, bool finalize) {
  const DataType type = r.type;
  const uint64_t mask = widthMask(type);
  const uint64_t scalar = readCode(type, r.scalar, 0);
  uint64_t v = l;
  if (p == nullptr) {
    if (r.kind == RedOpKind::kPreMulSum) v = (l * scalar) & mask;
  } else {
    const bool isSigned = isSignedInteger(type);
    const bool localGreater = isSigned ? signExtend(type, l) > signExtend(type, *p) : l > *p;
    const bool localLess = isSigned ? signExtend(type, l) < signExtend(type, *p) : l < *p;
    switch (r.kind) {
      case RedOpKind::kSum: v = (*p + l) & mask; break;
      case RedOpKind::kProd: v = (*p * l) & mask; break;
      case RedOpKind::kMax: v = localGreater ? l : *p; break;
      case RedOpKind::kMin: v = localLess ? l : *p; break;
      case RedOpKind::kPreMulSum: v = (*p + l * scalar) & mask; break;
    }
  }
  if (finalize && r.divisor > 1) {
    if (isSignedInteger(type)) {
      v = static_cast<uint64_t>(signExtend(type, v) / static_cast<int64_t>(r.divisor)) & mask;
    } else {
      v = v / r.divisor;
    }
  }
  return v;
}

// Float32: rounds through float after each operation.
uint64_t referenceFloat32(const Reduction& r, uint64_t l, const uint64_t* p) {
  auto real = [](uint64_t code) {
    return static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(code)));
  };
  auto code = [](double value) -> uint64_t {
    return std::bit_cast<uint32_t>(static_cast<float>(value));
  };
  const double s = real(readCode(DataType::kFloat32, r.scalar, 0));
  if (p == nullptr) return r.kind == RedOpKind::kPreMulSum ? code(real(l) * s) : l;
  switch (r.kind) {
    case RedOpKind::kSum: return code(real(*p) + real(l));
    case RedOpKind::kProd: return code(real(*p) * real(l));
    case RedOpKind::kMax: return maxCode(real(*p), real(l), *p, l);
    case RedOpKind::kMin: return minCode(real(*p), real(l), *p, l);
    case RedOpKind::kPreMulSum: return code(real(*p) + real(code(real(l) * s)));
  }
  return 0;
}

uint64_t referenceFloat64(const Reduction& r, uint64_t l, const uint64_t* p) {
  auto real = [](uint64_t code) { return std::bit_cast<double>(code); };
  auto code = [](double value) { return std::bit_cast<uint64_t>(value); };
  const double s = real(readCode(DataType::kFloat64, r.scalar, 0));
  if (p == nullptr) return r.kind == RedOpKind::kPreMulSum ? code(real(l) * s) : l;
  volatile double product = real(l) * s;  // rounded on its own, never fused with the add
  switch (r.kind) {
    case RedOpKind::kSum: return code(real(*p) + real(l));
    case RedOpKind::kProd: return code(real(*p) * real(l));
    case RedOpKind::kMax: return maxCode(real(*p), real(l), *p, l);
    case RedOpKind::kMin: return minCode(real(*p), real(l), *p, l);
    case RedOpKind::kPreMulSum: return code(real(*p) + product);
  }
  return 0;
}

// Half, bfloat16, fp8: exact in double, rounded to the type after each operation.
uint64_t referenceNarrow(const Reduction& r, uint64_t l, const uint64_t* p) {
  const DataType type = r.type;
  auto real = [type](uint64_t code) { return decodeReal(type, code); };
  auto code = [type](double value) { return encodeReal(type, value); };
  const double s = real(readCode(type, r.scalar, 0));
  if (p == nullptr) return r.kind == RedOpKind::kPreMulSum ? code(real(l) * s) : l;
  switch (r.kind) {
    case RedOpKind::kSum: return code(real(*p) + real(l));
    case RedOpKind::kProd: return code(real(*p) * real(l));
    case RedOpKind::kMax: return maxCode(real(*p), real(l), *p, l);
    case RedOpKind::kMin: return minCode(real(*p), real(l), *p, l);
    case RedOpKind::kPreMulSum: return code(real(*p) + real(code(real(l) * s)));
  }
  return 0;
}

uint64_t referenceElement(const Reduction& r, uint64_t l, const uint64_t* p, bool finalize) {
  if (!isFloatingPoint(r.type)) return referenceInteger(r, l, p, finalize);
  if (r.type == DataType::kFloat32) return referenceFloat32(r, l, p);
  if (r.type == DataType::kFloat64) return referenceFloat64(r, l, p);
  return referenceNarrow(r, l, p);
}

bool isNan(DataType type, uint64_t code) {
  return isFloatingPoint(type) && std::isnan(decodeReal(type, code));
}

// Arithmetic results that are NaN only need to be NaN (the payload is the hardware's choice);
// max and min return one of the inputs, so their NaNs must be the exact code.
bool sameResult(const Reduction& r, uint64_t expected, uint64_t actual) {
  const bool selects = r.kind == RedOpKind::kMax || r.kind == RedOpKind::kMin;
  if (!selects && isNan(r.type, expected)) return isNan(r.type, actual);
  return expected == actual;
}

std::vector<ReduceIsa> supportedIsas() {
  std::vector<ReduceIsa> isas;
  for (ReduceIsa isa : {ReduceIsa::kBaseline, ReduceIsa::kAvx2, ReduceIsa::kAvx512}) {
    if (reduceIsaSupported(isa)) isas.push_back(isa);
  }
  return isas;
}

uint64_t randomCode(DataType type, std::mt19937_64& rng) {
  const uint64_t bits = rng();
  const int pick = static_cast<int>(rng() % 8);
  switch (type) {
    case DataType::kFloat32: {
      const float specials[] = {0.0f,
                                -0.0f,
                                std::numeric_limits<float>::infinity(),
                                -std::numeric_limits<float>::infinity(),
                                std::numeric_limits<float>::quiet_NaN(),
                                0x1p-149f,
                                3.0e38f,
                                -1.0f};
      if (pick == 0) return std::bit_cast<uint32_t>(specials[bits % 8]);
      if (pick <= 2) return bits & 0xFFFFFFFFu;
      // Nearby magnitudes, so that sums and products round.
      const float value = std::ldexp(static_cast<float>(bits & 0xFFFFFF) / 0x1p24f + 0.5f,
                                     static_cast<int>((bits >> 32) % 7) - 3);
      return std::bit_cast<uint32_t>((bits >> 40) & 1 ? -value : value);
    }
    case DataType::kFloat64: {
      const double specials[] = {0.0,
                                 -0.0,
                                 std::numeric_limits<double>::infinity(),
                                 -std::numeric_limits<double>::infinity(),
                                 std::numeric_limits<double>::quiet_NaN(),
                                 0x1p-1074,
                                 1e308,
                                 -1.0};
      if (pick == 0) return std::bit_cast<uint64_t>(specials[bits % 8]);
      if (pick <= 2) return bits;
      const double value = std::ldexp(static_cast<double>(bits >> 11) / 0x1p53 + 0.5,
                                      static_cast<int>(rng() % 7) - 3);
      return std::bit_cast<uint64_t>((rng() & 1) ? -value : value);
    }
    default:
      // Integers: small values half the time (signs, exact divisions); narrow floats: any code.
      if (!isFloatingPoint(type) && pick < 4) {
        return static_cast<uint64_t>(pick * 5 - 9 + static_cast<int>(bits % 3)) & widthMask(type);
      }
      return bits & widthMask(type);
  }
}

std::vector<Reduction> reductionsFor(DataType type) {
  std::vector<Reduction> reductions;
  for (int op = 0; op < 4; ++op) reductions.push_back(makeBuiltinReduction(type, op, 3));
  reductions.push_back(makeBuiltinReduction(type, 4, 3));  // average over 3 ranks
  uint64_t scalar = 0;
  switch (type) {
    case DataType::kFloat32: scalar = std::bit_cast<uint32_t>(-2.5f); break;
    case DataType::kFloat64: scalar = std::bit_cast<uint64_t>(0.1); break;
    case DataType::kFloat16:
    case DataType::kBfloat16:
    case DataType::kFloat8e4m3:
    case DataType::kFloat8e5m2: scalar = encodeReal(type, -1.75); break;
    default: scalar = widthMask(type) - 2; break;  // -3: multiplication wraps
  }
  reductions.push_back(makePreMulSum(type, &scalar));
  return reductions;
}

enum class Aliasing { kNone, kOutIsLocal, kOutIsPeer };

struct Case {
  ReduceIsa isa;
  Reduction reduction;
  size_t count;
  bool withPeer;
  bool finalize;
  Aliasing aliasing;
  bool withOut2;
  size_t misalign;  // elements
  bool streamOut;
  bool streamOut2;
};

std::string describe(const Case& c) {
  return std::string(dataTypeName(c.reduction.type)) + " isa=" + reduceIsaName(c.isa) +
         " kind=" + std::to_string(static_cast<int>(c.reduction.kind)) +
         " divisor=" + std::to_string(c.reduction.divisor) + " count=" + std::to_string(c.count) +
         " peer=" + std::to_string(c.withPeer) + " finalize=" + std::to_string(c.finalize) +
         " aliasing=" + std::to_string(static_cast<int>(c.aliasing)) +
         " out2=" + std::to_string(c.withOut2) + " misalign=" + std::to_string(c.misalign) +
         " stream=" + std::to_string(c.streamOut) + " stream2=" + std::to_string(c.streamOut2);
}

// Runs one case on fresh random data and compares every element (and the guard elements around
// the outputs) with the reference. Returns false after the first mismatch, with a message.
::testing::AssertionResult runCase(const Case& c, std::mt19937_64& rng) {
  const DataType type = c.reduction.type;
  const size_t size = dataTypeSize(type);
  const size_t total = c.count + c.misalign + 1;  // one guard element after
  std::vector<unsigned char> local(total * size), peer(total * size), out(total * size),
      out2Storage(total * size + 128);
  // out2 as aligned as out within 64 bytes, so that a streamed out2 (streamOut2) is streamed; one
  // element further where out2 alone is streamed, which the loop then aligns on instead.
  const size_t out2Shift = c.streamOut2 && !c.streamOut ? size : 0;
  unsigned char* const out2 =
      out2Storage.data() + out2Shift +
      (reinterpret_cast<uintptr_t>(out.data()) - reinterpret_cast<uintptr_t>(out2Storage.data())) % 64;
  for (size_t i = 0; i < total; ++i) {
    writeCode(type, local.data(), i, randomCode(type, rng));
    writeCode(type, peer.data(), i, randomCode(type, rng));
    writeCode(type, out.data(), i, randomCode(type, rng));
    writeCode(type, out2, i, randomCode(type, rng));
  }
  const std::vector<unsigned char> localBefore = local, peerBefore = peer, outBefore = out,
                                   out2Before(out2, out2 + total * size);
  unsigned char* localBase = local.data() + c.misalign * size;
  unsigned char* peerBase = peer.data() + c.misalign * size;
  unsigned char* outBase = out.data() + c.misalign * size;
  ReduceArgs args;
  args.local = localBase;
  args.peer = c.withPeer ? peerBase : nullptr;
  args.out = c.aliasing == Aliasing::kOutIsLocal  ? localBase
             : c.aliasing == Aliasing::kOutIsPeer ? peerBase
                                                  : outBase;
  args.out2 = c.withOut2 ? out2 + c.misalign * size : nullptr;
  args.count = c.count;
  args.finalize = c.finalize;
  args.streamOut = c.streamOut;
  args.streamOut2 = c.streamOut2;
  reduceWithIsa(c.isa, c.reduction, args);

  const std::vector<unsigned char>& outBuffer = c.aliasing == Aliasing::kOutIsLocal  ? local
                                                : c.aliasing == Aliasing::kOutIsPeer ? peer
                                                                                     : out;
  for (size_t i = 0; i < total; ++i) {
    const bool inRange = i >= c.misalign && i < c.misalign + c.count;
    const uint64_t l = readCode(type, localBefore.data(), i);
    const uint64_t p = readCode(type, peerBefore.data(), i);
    const uint64_t expected =
        inRange ? referenceElement(c.reduction, l, c.withPeer ? &p : nullptr, c.finalize) : 0;
    const uint64_t untouched = readCode(type,
                                        (c.aliasing == Aliasing::kOutIsLocal  ? localBefore
                                         : c.aliasing == Aliasing::kOutIsPeer ? peerBefore
                                                                              : outBefore)
                                            .data(),
                                        i);
    const uint64_t got = readCode(type, outBuffer.data(), i);
    const uint64_t want = inRange ? expected : untouched;
    if (inRange ? !sameResult(c.reduction, want, got) : want != got) {
      return ::testing::AssertionFailure()
             << describe(c) << ": element " << i << " local 0x" << std::hex << l << " peer 0x" << p
             << " expected 0x" << want << " got 0x" << got;
    }
    if (c.withOut2) {
      const uint64_t got2 = readCode(type, out2, i);
      const uint64_t want2 = inRange ? got : readCode(type, out2Before.data(), i);
      if (got2 != want2) {
        return ::testing::AssertionFailure() << describe(c) << ": out2 element " << i << " 0x"
                                             << std::hex << got2 << " expected 0x" << want2;
      }
    }
    // Inputs that are not the output are never written.
    if (c.aliasing != Aliasing::kOutIsLocal && readCode(type, local.data(), i) != l) {
      return ::testing::AssertionFailure() << describe(c) << ": local modified at " << i;
    }
    if (c.aliasing != Aliasing::kOutIsPeer && readCode(type, peer.data(), i) != p) {
      return ::testing::AssertionFailure() << describe(c) << ": peer modified at " << i;
    }
  }
  return ::testing::AssertionSuccess();
}

class ReduceTypeTest : public ::testing::TestWithParam<DataType> {};

TEST_P(ReduceTypeTest, MatchesTheScalarReferenceEverywhere) {
  const DataType type = GetParam();
  std::mt19937_64 rng(static_cast<uint64_t>(type) * 7919 + 1);
  int cases = 0;
  for (ReduceIsa isa : supportedIsas()) {
    for (const Reduction& reduction : reductionsFor(type)) {
      for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1003}, size_t{5000}}) {
        for (bool withPeer : {true, false}) {
          for (bool finalize : {false, true}) {
            for (Aliasing aliasing :
                 {Aliasing::kNone, Aliasing::kOutIsLocal, Aliasing::kOutIsPeer}) {
              if (aliasing == Aliasing::kOutIsPeer && !withPeer) continue;
              for (bool withOut2 : {false, true}) {
                for (size_t misalign : {size_t{0}, size_t{1}}) {
                  // Streaming needs whole vectors past the alignment head; one odd count covers head, body and tail.
                  // 0: no stream, 1: `out` streamed, 2: both outputs, 3: `out2` alone.
                  for (int streams = 0; streams < (count == 1003 ? 4 : 1); ++streams) {
                    Case c{isa, reduction, count, withPeer, finalize, aliasing, withOut2, misalign,
                           streams == 1 || streams == 2, streams >= 2};
                    ASSERT_TRUE(runCase(c, rng));
                    ++cases;
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(cases, 0);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, ReduceTypeTest, ::testing::ValuesIn(kAllTypes),
                         [](const auto& info) { return std::string(dataTypeName(info.param)); });

// Runs one element through every supported level and checks all agree with `expected`.
template <class T>
void expectEachIsa(const Reduction& reduction, T local, const T* peer, T expected,
                   bool finalize = false) {
  for (ReduceIsa isa : supportedIsas()) {
    // 67 identical elements: full vectors for every lane width, then a tail.
    std::vector<T> l(67, local), p(67, peer ? *peer : T{}), out(67);
    ReduceArgs args;
    args.local = l.data();
    args.peer = peer ? p.data() : nullptr;
    args.out = out.data();
    args.count = l.size();
    args.finalize = finalize;
    reduceWithIsa(isa, reduction, args);
    for (size_t i = 0; i < out.size(); ++i) {
      ASSERT_EQ(std::memcmp(&out[i], &expected, sizeof(T)), 0)
          << reduceIsaName(isa) << " element " << i;
    }
  }
}

TEST(Reduce, FloatPreMulSumRoundsTheProductBeforeAdding) {
  // (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24 rounds to 1 + 2^-11; adding -1 leaves 2^-11. A fused
  // multiply-add would keep the 2^-24.
  const float s = 1.0f + 0x1p-12f;
  const float peer = -1.0f;
  expectEachIsa(makePreMulSum(DataType::kFloat32, &s), s, &peer, 0x1p-11f);
  const double sd = 1.0 + 0x1p-27;
  const double peerD = -1.0;
  expectEachIsa(makePreMulSum(DataType::kFloat64, &sd), sd, &peerD, 0x1p-26);
}

TEST(Reduce, NarrowPreMulSumRoundsTwice) {
  // Half: (1 + 2^-10)^2 rounds to 1 + 2^-9 (0x3C02); adding 2^-11 is a tie that stays at 0x3C02.
  // One rounding of the exact 1 + 2^-9 + 2^-11 + 2^-20 would give 0x3C03.
  const uint16_t s = 0x3C01;
  const uint16_t peer = 0x1000;  // 2^-11
  expectEachIsa<uint16_t>(makePreMulSum(DataType::kFloat16, &s), 0x3C01, &peer, 0x3C02);
}

TEST(Reduce, MaxMinIgnoreNanAndOrderZeros) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Reduction max = makeBuiltinReduction(DataType::kFloat32, 2, 2);
  const Reduction min = makeBuiltinReduction(DataType::kFloat32, 3, 2);
  const float one = 1.0f, zero = 0.0f, negativeZero = -0.0f;
  expectEachIsa(max, nan, &one, 1.0f);
  expectEachIsa(max, one, &nan, 1.0f);
  expectEachIsa(min, nan, &one, 1.0f);
  expectEachIsa(min, one, &nan, 1.0f);
  expectEachIsa(max, zero, &negativeZero, 0.0f);
  expectEachIsa(max, negativeZero, &zero, 0.0f);
  expectEachIsa(min, zero, &negativeZero, -0.0f);
  expectEachIsa(min, negativeZero, &zero, -0.0f);
  // Two NaNs: the local one, unchanged.
  const float localNan = std::bit_cast<float>(0xFFC00123u);
  const float peerNan = std::bit_cast<float>(0x7FC00456u);
  expectEachIsa(max, localNan, &peerNan, localNan);
  // The same rules hold for the narrow types (half -0 is 0x8000, e4m3 NaN 0x7F).
  const uint16_t halfZero = 0x0000;
  expectEachIsa<uint16_t>(makeBuiltinReduction(DataType::kFloat16, 2, 2), 0x8000, &halfZero, 0);
  const uint8_t e4m3Nan = 0x7F;
  expectEachIsa<uint8_t>(makeBuiltinReduction(DataType::kFloat8e4m3, 3, 2), 0xB8, &e4m3Nan, 0xB8);
}

TEST(Reduce, Fp8ArithmeticSaturatesButMaxKeepsInfinity) {
  const uint8_t e4m3Max = 0x7E;  // 448
  expectEachIsa<uint8_t>(makeBuiltinReduction(DataType::kFloat8e4m3, 0, 2), 0x7E, &e4m3Max, 0x7E);
  const uint8_t e5m2Max = 0xFB;  // -57344
  expectEachIsa<uint8_t>(makeBuiltinReduction(DataType::kFloat8e5m2, 0, 2), 0xFB, &e5m2Max, 0xFB);
  const uint8_t e5m2Infinity = 0x7C;
  expectEachIsa<uint8_t>(makeBuiltinReduction(DataType::kFloat8e5m2, 0, 2), 0x3C, &e5m2Infinity,
                         0x7B);
  expectEachIsa<uint8_t>(makeBuiltinReduction(DataType::kFloat8e5m2, 2, 2), 0x3C, &e5m2Infinity,
                         0x7C);
  // Half does not saturate.
  const uint16_t halfMax = 0x7BFF;
  expectEachIsa<uint16_t>(makeBuiltinReduction(DataType::kFloat16, 0, 2), 0x7BFF, &halfMax, 0x7C00);
}

TEST(Reduce, IntegerAverageTruncatesTowardZero) {
  const Reduction avg = makeBuiltinReduction(DataType::kInt32, 4, 2);
  const int32_t minusFour = -4;
  expectEachIsa<int32_t>(avg, -3, &minusFour, -3, /*finalize=*/true);   // -7 / 2
  expectEachIsa<int32_t>(avg, -3, &minusFour, -7, /*finalize=*/false);  // not the last step
  const Reduction avg8 = makeBuiltinReduction(DataType::kInt8, 4, 3);
  const int8_t hundred = 100;
  expectEachIsa<int8_t>(avg8, 100, &hundred, -18, /*finalize=*/true);  // 200 wraps to -56
  const Reduction avgU64 = makeBuiltinReduction(DataType::kUint64, 4, 4);
  const uint64_t big = UINT64_MAX;
  expectEachIsa<uint64_t>(avgU64, 3, &big, 0, /*finalize=*/true);  // wraps to 2, then 2 / 4
  const Reduction avgI64 = makeBuiltinReduction(DataType::kInt64, 4, 2);
  const int64_t lowest = INT64_MIN;
  expectEachIsa<int64_t>(avgI64, 0, &lowest, INT64_MIN / 2, /*finalize=*/true);
  expectEachIsa<int64_t>(avgI64, 5, nullptr, 2, /*finalize=*/true);  // copy, then divide
}

TEST(Reduce, IntegerAverageMatchesPlainDivisionForManyDivisors) {
  std::mt19937_64 rng(11);
  for (uint64_t divisor : {uint64_t{2}, uint64_t{3}, uint64_t{7}, uint64_t{8}, uint64_t{100},
                           uint64_t{255}, uint64_t{256}, uint64_t{65537}, uint64_t{2147483659},
                           uint64_t{4294967295}, uint64_t{4294967296}, (uint64_t{1} << 40) + 3}) {
    for (DataType type : {DataType::kInt8, DataType::kUint8, DataType::kInt32, DataType::kUint32,
                          DataType::kInt64, DataType::kUint64}) {
      Reduction avg = makeBuiltinReduction(type, 0, 1);
      avg.divisor = divisor;
      const Case c{bestReduceIsa(), avg, 1000, true, true, Aliasing::kNone, true, 0, true, true};
      ASSERT_TRUE(runCase(c, rng));
      // A scaled input without a peer, divided too (a PreMulSum given a divisor by hand).
      const uint64_t three = 3;
      Reduction scaled = makePreMulSum(type, &three);
      scaled.divisor = divisor;
      const Case alone{bestReduceIsa(), scaled, 5000, false, true, Aliasing::kOutIsLocal, true, 1, false, false};
      ASSERT_TRUE(runCase(alone, rng));
    }
  }
}

TEST(Reduce, IntegerAverageSpansManyDivisionBlocks) {
  // 40003 int8 elements cross the final division's cache blocks more than twice, in place.
  const Reduction avg = makeBuiltinReduction(DataType::kInt8, 4, 3);
  std::mt19937 rng(5);
  for (ReduceIsa isa : supportedIsas()) {
    std::vector<int8_t> local(40003), peer(40003), out2(40003);
    for (size_t i = 0; i < local.size(); ++i) {
      local[i] = static_cast<int8_t>(rng());
      peer[i] = static_cast<int8_t>(rng());
    }
    const std::vector<int8_t> before = local;
    ReduceArgs args;
    args.local = local.data();
    args.peer = peer.data();
    args.out = local.data();
    args.out2 = out2.data();
    args.count = local.size();
    args.finalize = true;
    reduceWithIsa(isa, avg, args);
    for (size_t i = 0; i < local.size(); ++i) {
      const auto wrapped = static_cast<int8_t>(static_cast<uint8_t>(before[i] + peer[i]));
      const auto expected = static_cast<int8_t>(wrapped / 3);
      ASSERT_EQ(local[i], expected) << reduceIsaName(isa) << " element " << i;
      ASSERT_EQ(out2[i], expected) << reduceIsaName(isa) << " element " << i;
    }
  }
}

TEST(CopyTo, CopiesToOneOrTwoOutputs) {
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{63}, size_t{16 * 1024 + 5}, size_t{100000}}) {
    std::vector<unsigned char> src(bytes + 2), out(bytes + 2, 0xEE), out2(bytes + 2, 0xDD);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 31 + 7);
    copyTo(src.data() + 1, out.data() + 1, nullptr, bytes);
    EXPECT_TRUE(std::equal(src.begin() + 1, src.begin() + 1 + bytes, out.begin() + 1)) << bytes;
    EXPECT_EQ(out[0], 0xEE);
    EXPECT_EQ(out[bytes + 1], 0xEE);
    std::fill(out.begin(), out.end(), 0xEE);
    copyTo(src.data() + 1, out.data() + 1, out2.data() + 1, bytes);
    EXPECT_TRUE(std::equal(src.begin() + 1, src.begin() + 1 + bytes, out.begin() + 1)) << bytes;
    EXPECT_TRUE(std::equal(src.begin() + 1, src.begin() + 1 + bytes, out2.begin() + 1)) << bytes;
    EXPECT_EQ(out2[0], 0xDD);
    EXPECT_EQ(out2[bytes + 1], 0xDD);
  }
}

TEST(CopyTo, StreamsIntoAnyAlignment) {
  // Every start offset within a vector, lengths around whole vectors: the non-temporal body starts
  // at the first aligned address and partial vectors cover both ends.
  for (size_t offset = 0; offset < 64; offset += 7) {
    for (size_t bytes : {size_t{0}, size_t{5}, size_t{64}, size_t{127}, size_t{16 * 1024 + 5}, size_t{100000}}) {
      std::vector<unsigned char> src(bytes + 2), out(bytes + offset + 2, 0xEE), out2(bytes + 2, 0xDD);
      for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 31 + 7);
      copyTo(src.data() + 1, out.data() + offset + 1, bytes % 2 ? out2.data() + 1 : nullptr, bytes, true);
      EXPECT_TRUE(std::equal(src.begin() + 1, src.begin() + 1 + bytes, out.begin() + offset + 1))
          << offset << " " << bytes;
      EXPECT_EQ(out[offset], 0xEE);
      EXPECT_EQ(out[offset + bytes + 1], 0xEE);
      if (bytes % 2) {
        EXPECT_TRUE(std::equal(src.begin() + 1, src.begin() + 1 + bytes, out2.begin() + 1));
      }
    }
  }
}

TEST(CopyTo, StreamsEitherOutputAlone) {
  for (bool streamFirst : {false, true}) {
    std::vector<unsigned char> src(100003), out(src.size() + 1), out2(src.size() + 3);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 29 + 3);
    copyTo(src.data(), out.data() + 1, out2.data() + 3, src.size(), streamFirst, !streamFirst);
    EXPECT_TRUE(std::equal(src.begin(), src.end(), out.begin() + 1)) << streamFirst;
    EXPECT_TRUE(std::equal(src.begin(), src.end(), out2.begin() + 3)) << streamFirst;
  }
  // In place: only the second output is written, streamed.
  std::vector<unsigned char> data(5000), out2(5000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<unsigned char>(i * 13);
  copyTo(data.data(), data.data(), out2.data(), data.size(), false, true);
  EXPECT_EQ(out2, data);
}

TEST(CopyTo, SourceMayBeTheFirstOutput) {
  std::vector<unsigned char> data(5000), out2(5000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<unsigned char>(i * 13);
  const std::vector<unsigned char> before = data;
  copyTo(data.data(), data.data(), out2.data(), data.size());
  EXPECT_EQ(data, before);
  EXPECT_EQ(out2, before);
}

// Not a check: prints the speed of the hot case (float sum of two 64 MiB inputs into two
// outputs) for the record. The figures go to docs through the perf binaries, not this test.
TEST(ReduceSpeed, PrintsFloatSumBandwidth) {
  const size_t count = (64u << 20) / sizeof(float);
  std::vector<float> local(count, 1.0f), peer(count, 2.0f), out(count), out2(count);
  const Reduction sum = makeBuiltinReduction(DataType::kFloat32, 0, 2);
  for (ReduceIsa isa : supportedIsas()) {
    for (bool withOut2 : {false, true}) {
      ReduceArgs args;
      args.local = local.data();
      args.peer = peer.data();
      args.out = out.data();
      args.out2 = withOut2 ? out2.data() : nullptr;
      args.count = count;
      double best = 1e30;
      for (int rep = 0; rep < 4; ++rep) {
        const auto start = std::chrono::steady_clock::now();
        reduceWithIsa(isa, sum, args);
        best = std::min(
            best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      }
      const double traffic = static_cast<double>(count * sizeof(float)) * (withOut2 ? 4 : 3);
      std::printf(
          "[ speed    ] float sum 64 MiB, %s, %d output(s): %.2f GB/s of input, %.2f GB/s of "
          "traffic\n",
          reduceIsaName(isa), withOut2 ? 2 : 1, count * sizeof(float) / best / 1e9,
          traffic / best / 1e9);
      EXPECT_EQ(out[count - 1], 3.0f);
    }
  }
  const auto start = std::chrono::steady_clock::now();
  std::memcpy(out.data(), local.data(), count * sizeof(float));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("[ speed    ] memcpy 64 MiB (for comparison): %.2f GB/s\n",
              count * sizeof(float) / seconds / 1e9);
}

}  // namespace
}  // namespace weft::algorithms
