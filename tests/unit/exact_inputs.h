#pragma once
// Inputs whose sums are exact in every type the GPU reduces, for the host tests of the kernels'
// loops (lane_loop_test.cc, direct_allreduce_test.cc, nvls_allreduce_test.cc): small integers,
// written in float itself or in a narrow float's code (device_reduce.cuh's codecs).

#include <cstdint>

namespace weft::device {

/// Writes a float as itself; the narrow floats' codecs have the same fromFloat.
struct FloatCodec {
  using Storage = float;
  static float fromFloat(float x) { return x; }
};

/// Rank `rank`'s element i in call `call`: an integer from -span/2 to span/2. Sums of such values
/// over the ranks the tests use are exact in every type (span 5 for the narrow floats: at 4 ranks,
/// within 8).
inline float exactInput(int call, int rank, uint64_t i, int span) {
  return static_cast<float>(static_cast<int>((call * 5 + rank * 7 + i * 3) % static_cast<uint64_t>(span)) - span / 2);
}

}  // namespace weft::device
