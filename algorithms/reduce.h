#pragma once
// Element-wise reduction kernels for host memory, for all 12 data types and every operator.
// Half, bfloat16 and both fp8 formats compute in float and round to nearest even; conversions to
// fp8 saturate to the largest finite value (as CUDA's __NV_SATFINITE conversions do).
// The hot loops pick AVX-512/AVX2 code at run time on a portable x86-64 baseline build.

#include <cstddef>

#include "algorithms/datatype.h"

namespace weft::algorithms {

/// One pass over `count` elements:
///   v = local (scaled: x * scalar for kPreMulSum)      if peer == nullptr
///   v = peer  ⊕ scaled(local)                          otherwise
///   v = v / divisor  (integers, truncating)            if finalize and divisor > 1
///   out[i] = v; out2[i] = v (if out2)
/// `local` must not be null. `out` may alias `local` or `peer`; `out2` must not alias the inputs.
struct ReduceArgs {
  const void* local = nullptr;
  const void* peer = nullptr;
  void* out = nullptr;
  void* out2 = nullptr;
  size_t count = 0;
  bool finalize = false;
};

void reduce(const Reduction& reduction, const ReduceArgs& args);

/// Copies `bytes` from `src` to `out` and, if not null, `out2`. Same run-time dispatch as reduce.
void copyTo(const void* src, void* out, void* out2, size_t bytes);

}  // namespace weft::algorithms
