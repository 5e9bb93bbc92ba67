#pragma once
// The instruction-set levels of the reduction kernels and how reduce() chooses between them.
// Each level is the same kernel source compiled for another target (reduce_kernel_*.cc); the best
// level the CPU supports is detected once. Tests run every supported level through
// reduceWithIsa.

#include <cstddef>
#include <cstdint>

#include "algorithms/datatype.h"
#include "algorithms/reduce.h"

namespace weft::algorithms {

enum class ReduceIsa : int {
  kBaseline = 0,  // x86-64 (SSE2), or whatever the build targets elsewhere
  kAvx2 = 1,
  kAvx512 = 2,  // AVX-512 F, BW, DQ, VL
};

/// "baseline", "avx2", "avx512".
const char* reduceIsaName(ReduceIsa isa);
/// Whether this CPU (and OS) can run the level.
bool reduceIsaSupported(ReduceIsa isa);
/// The highest supported level; detected on the first call.
ReduceIsa bestReduceIsa();

/// reduce() with a chosen level, which must be supported.
void reduceWithIsa(ReduceIsa isa, const Reduction& reduction, const ReduceArgs& args);

/// What one kernel loop computes per element: `peer op local`, for kScale `local * scalar`, for
/// kCopy `local`.
enum class LaneOp : int { kSum, kProd, kMax, kMin, kPreMulSum, kScale, kCopy };

/// One kernel call. `peer` is unused by kScale and kCopy; `out2` may be null; `scalar` is the
/// Reduction's; `streamOut` and `streamOut2` as in ReduceArgs.
struct KernelArgs {
  const unsigned char* local = nullptr;
  const unsigned char* peer = nullptr;
  unsigned char* out = nullptr;
  unsigned char* out2 = nullptr;
  size_t count = 0;
  const unsigned char* scalar = nullptr;
  bool streamOut = false;
  bool streamOut2 = false;
};

void runReduceKernelBaseline(DataType type, LaneOp op, const KernelArgs& args);
void runReduceKernelAvx2(DataType type, LaneOp op, const KernelArgs& args);
void runReduceKernelAvx512(DataType type, LaneOp op, const KernelArgs& args);

}  // namespace weft::algorithms
