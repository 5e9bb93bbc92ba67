// The GPU kernels' element arithmetic (src/device/device_reduce.cuh), run on the CPU against the
// host's (algorithms/reduce.h), which its header says it matches bit for bit: every pair of fp8
// codes, every half and bfloat16 code against chosen and random peers, random and extreme values
// of the other types; every op, the average and PreMulSum included. A NaN that arithmetic makes
// may differ in its bits (the GPU's is canonical): both must be NaN. (The conversions are CUDA's
// host code here; on the GPU they are its instructions, which CUDA documents as the same rounding.)

#include "src/device/device_reduce.cuh"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <random>
#include <string>
#include <vector>

#include "algorithms/datatype.h"
#include "algorithms/reduce.h"

namespace weft::device {
namespace {

using algorithms::DataType;
using algorithms::Reduction;

// The GPU's result for each pair: reduce(peer, local), then the integer average's division.
template <class Math, RedOpKind kKind>
std::vector<typename Math::Storage> onTheGpuPath(const Reduction& reduction,
                                                  const std::vector<typename Math::Storage>& peers,
                                                  const std::vector<typename Math::Storage>& locals) {
  Reducer<Math, kKind> reducer;
  std::memcpy(&reducer.scalar, reduction.scalar, sizeof(reducer.scalar));
  reducer.divisor = reduction.divisor;
  std::vector<typename Math::Storage> out(locals.size());
  for (size_t i = 0; i < locals.size(); ++i) out[i] = reducer.finish(reducer.reduce(peers[i], locals[i]));
  return out;
}

template <class Math>
std::vector<typename Math::Storage> onTheGpuPath(const Reduction& reduction,
                                                  const std::vector<typename Math::Storage>& peers,
                                                  const std::vector<typename Math::Storage>& locals) {
  switch (reduction.kind) {
    case RedOpKind::kSum: return onTheGpuPath<Math, RedOpKind::kSum>(reduction, peers, locals);
    case RedOpKind::kProd: return onTheGpuPath<Math, RedOpKind::kProd>(reduction, peers, locals);
    case RedOpKind::kMax: return onTheGpuPath<Math, RedOpKind::kMax>(reduction, peers, locals);
    case RedOpKind::kMin: return onTheGpuPath<Math, RedOpKind::kMin>(reduction, peers, locals);
    case RedOpKind::kPreMulSum: return onTheGpuPath<Math, RedOpKind::kPreMulSum>(reduction, peers, locals);
  }
  return {};
}

template <class T>
uint64_t bitsOf(T value) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  return bits;
}

template <class Storage>
std::vector<Storage> onTheHostPath(const Reduction& reduction, const std::vector<Storage>& peers,
                                   const std::vector<Storage>& locals) {
  std::vector<Storage> out(locals.size());
  algorithms::ReduceArgs args;
  args.local = locals.data();
  args.peer = peers.data();
  args.out = out.data();
  args.count = locals.size();
  args.finalize = true;
  algorithms::reduce(reduction, args);
  return out;
}

// The reductions to check on `type`: the four built-in ops, the average of 3 ranks, and PreMulSum
// by `scalar` (in the type's encoding).
template <class Storage>
std::vector<std::pair<std::string, Reduction>> reductionsOf(DataType type, Storage scalar) {
  std::vector<std::pair<std::string, Reduction>> reductions;
  const char* names[] = {"sum", "prod", "max", "min", "avg"};
  for (int op = 0; op < 5; ++op) reductions.emplace_back(names[op], algorithms::makeBuiltinReduction(type, op, 3));
  reductions.emplace_back("premulsum", algorithms::makePreMulSum(type, &scalar));
  return reductions;
}

// Compares both paths on every pair; `isNan` tells a NaN code of the type (null: no NaN).
template <class Math>
void expectSameOnBothPaths(DataType type, typename Math::Storage scalar,
                           const std::vector<typename Math::Storage>& peers,
                           const std::vector<typename Math::Storage>& locals,
                           bool (*isNan)(typename Math::Storage)) {
  ASSERT_EQ(peers.size(), locals.size());
  for (const auto& [name, reduction] : reductionsOf(type, scalar)) {
    const auto gpu = onTheGpuPath<Math>(reduction, peers, locals);
    const auto host = onTheHostPath(reduction, peers, locals);
    int mismatches = 0;
    for (size_t i = 0; i < locals.size() && mismatches < 5; ++i) {
      if (bitsOf(gpu[i]) == bitsOf(host[i])) continue;
      if (isNan != nullptr && isNan(gpu[i]) && isNan(host[i]) && name != "max" && name != "min") continue;
      ++mismatches;
      ADD_FAILURE() << algorithms::dataTypeName(type) << " " << name << " of peer 0x" << std::hex
                    << bitsOf(peers[i]) << " and local 0x" << bitsOf(locals[i]) << ": the GPU's 0x" << bitsOf(gpu[i])
                    << ", the host's 0x" << bitsOf(host[i]);
    }
  }
}

template <class Codec>
bool narrowNan(typename Codec::Storage code) {
  return std::isnan(Codec::toFloat(code));
}

template <class Codec>
void everyPairOfCodes(DataType type) {
  using Storage = typename Codec::Storage;
  std::vector<Storage> peers, locals;
  for (uint32_t peer = 0; peer < 256; ++peer) {
    for (uint32_t local = 0; local < 256; ++local) {
      peers.push_back(static_cast<Storage>(peer));
      locals.push_back(static_cast<Storage>(local));
    }
  }
  expectSameOnBothPaths<NarrowMath<Codec>>(type, Codec::fromFloat(0.3f), peers, locals, narrowNan<Codec>);
}

TEST(DeviceReduce, Fp8MatchesTheHostOnEveryPairOfCodes) {
  everyPairOfCodes<Fp8Codec<__NV_E4M3>>(DataType::kFloat8e4m3);
  everyPairOfCodes<Fp8Codec<__NV_E5M2>>(DataType::kFloat8e5m2);
}

// Every 16-bit code against each of `chosen` peers (zeros, ones, the extremes, a subnormal,
// infinities, a NaN), and random pairs.
template <class Codec>
void everyCodeAgainstChosenPeers(DataType type, const std::vector<uint16_t>& chosen) {
  std::vector<uint16_t> peers, locals;
  for (uint16_t peer : chosen) {
    for (uint32_t local = 0; local < 65536; ++local) {
      peers.push_back(peer);
      locals.push_back(static_cast<uint16_t>(local));
    }
  }
  std::mt19937 random(612026);
  for (int i = 0; i < 200000; ++i) {
    peers.push_back(static_cast<uint16_t>(random()));
    locals.push_back(static_cast<uint16_t>(random()));
  }
  expectSameOnBothPaths<NarrowMath<Codec>>(type, Codec::fromFloat(0.3f), peers, locals, narrowNan<Codec>);
}

TEST(DeviceReduce, HalfAndBfloat16MatchTheHostOnEveryCode) {
  // +0, -0, 1, -1, 65504 (largest), 2^-14 (least normal), least subnormal, +inf, -inf, NaN, 0.1.
  everyCodeAgainstChosenPeers<HalfCodec>(DataType::kFloat16, {0x0000, 0x8000, 0x3c00, 0xbc00, 0x7bff, 0x0400, 0x0001,
                                                               0x7c00, 0xfc00, 0x7e00, 0x2e66});
  everyCodeAgainstChosenPeers<Bfloat16Codec>(DataType::kBfloat16, {0x0000, 0x8000, 0x3f80, 0xbf80, 0x7f7f, 0x0080,
                                                                   0x0001, 0x7f80, 0xff80, 0x7fc0, 0x3dcd});
}

// Every pair of `specials`, then random pairs of codes: for integers, of a random width (so that
// sums and products do not all wrap) and sign; for floating types, random bits.
template <class Storage>
void randomAndSpecialPairs(const std::vector<Storage>& specials, bool integer, std::vector<Storage>* peers,
                           std::vector<Storage>* locals) {
  for (Storage a : specials) {
    for (Storage b : specials) {
      peers->push_back(a);
      locals->push_back(b);
    }
  }
  using Bits = std::conditional_t<sizeof(Storage) == 8, uint64_t, uint32_t>;
  constexpr int kBits = 8 * sizeof(Storage);
  std::mt19937_64 random(6122026);
  const auto code = [&] {
    Bits bits = static_cast<Bits>(random());
    if (integer) {
      bits >>= (8 * sizeof(Bits) - kBits) + random() % kBits;  // within the type, of random width
      if (random() % 2 != 0) bits = static_cast<Bits>(Bits{0} - bits);
    }
    Storage value;
    std::memcpy(&value, &bits, sizeof(Storage));  // the low bytes: the type's own code
    return value;
  };
  for (int i = 0; i < 100000; ++i) {
    peers->push_back(code());
    locals->push_back(code());
  }
}

template <class F>
bool wideNan(F value) {
  return std::isnan(value);
}

TEST(DeviceReduce, FloatAndDoubleMatchTheHost) {
  const float inf = INFINITY;
  std::vector<float> floats, floatPeers, floatLocals;
  for (float value : {0.0f, -0.0f, 1.0f, -1.0f, 0.1f, 3.4e38f, -3.4e38f, 1e-45f, 1.2e-38f, inf, -inf, NAN}) {
    floats.push_back(value);
  }
  std::vector<uint32_t> floatBits, peerBits, localBits;
  for (float value : floats) floatBits.push_back(std::bit_cast<uint32_t>(value));
  randomAndSpecialPairs(floatBits, false, &peerBits, &localBits);
  for (uint32_t bits : peerBits) floatPeers.push_back(std::bit_cast<float>(bits));
  for (uint32_t bits : localBits) floatLocals.push_back(std::bit_cast<float>(bits));
  expectSameOnBothPaths<FloatMath>(DataType::kFloat32, 0.3f, floatPeers, floatLocals, wideNan<float>);

  std::vector<uint64_t> doubleBits, doublePeerBits, doubleLocalBits;
  for (double value : {0.0, -0.0, 1.0, -1.0, 0.1, 1.7e308, -1.7e308, 5e-324, 2.2e-308, static_cast<double>(inf),
                       -static_cast<double>(inf), static_cast<double>(NAN)}) {
    doubleBits.push_back(std::bit_cast<uint64_t>(value));
  }
  randomAndSpecialPairs(doubleBits, false, &doublePeerBits, &doubleLocalBits);
  std::vector<double> doublePeers, doubleLocals;
  for (uint64_t bits : doublePeerBits) doublePeers.push_back(std::bit_cast<double>(bits));
  for (uint64_t bits : doubleLocalBits) doubleLocals.push_back(std::bit_cast<double>(bits));
  expectSameOnBothPaths<DoubleMath>(DataType::kFloat64, 0.3, doublePeers, doubleLocals, wideNan<double>);
}

template <class T>
void integersMatch(DataType type) {
  const std::vector<T> specials = {T(0), T(1), T(-1), std::numeric_limits<T>::min(), std::numeric_limits<T>::max(),
                                   T(std::numeric_limits<T>::max() / 3), T(7), T(-7)};
  std::vector<T> peers, locals;
  randomAndSpecialPairs(specials, true, &peers, &locals);
  expectSameOnBothPaths<IntegerMath<T>>(type, T(3), peers, locals, nullptr);
}

TEST(DeviceReduce, IntegersMatchTheHost) {
  integersMatch<int8_t>(DataType::kInt8);
  integersMatch<uint8_t>(DataType::kUint8);
  integersMatch<int32_t>(DataType::kInt32);
  integersMatch<uint32_t>(DataType::kUint32);
  integersMatch<int64_t>(DataType::kInt64);
  integersMatch<uint64_t>(DataType::kUint64);
}

}  // namespace
}  // namespace weft::device
