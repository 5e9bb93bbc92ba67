#pragma once
// Element-wise reduction kernels for host memory, for all 12 data types and every operator.
// The hot loops pick AVX-512/AVX2 code at run time on a portable x86-64 baseline build.
//
// The arithmetic, bit for bit (a reference computed this way matches exactly):
// - Integers: sum, prod and PreMulSum wrap modulo 2^bits; max/min compare as signed or unsigned;
//   the average's final division truncates toward zero on the signed value (-7 / 2 == -3).
// - float, double: one IEEE operation at a time in the type, round to nearest even. PreMulSum is
//   round(round(local * scalar) + peer), never a fused multiply-add.
// - half, bfloat16, fp8: each operation on the values as float, rounded back to the type (nearest
//   even, subnormals included) after each one: sum T(p + l), prod T(p * l), PreMulSum
//   T(p + T(l * s)), the scale alone T(l * s). Each rounding equals the correct rounding of the
//   exact result, so computing in double and storing with storeFromDouble gives the same bits.
//   Half and bfloat16 overflow to infinity; fp8 saturates to its largest finite value (e4m3 448,
//   e5m2 57344), infinity included, as CUDA's __NV_SATFINITE conversions do.
// - max/min on floating types: a NaN operand is ignored unless both are NaN (then the local one is
//   kept); +0 counts as above -0; the result is one of the two input codes unchanged (an e5m2
//   infinity too: only arithmetic saturates). NaNs from arithmetic are NaN, payload unspecified.
// - Without a peer, sum/prod/max/min copy `local` unchanged (then divide, for an integer average).

#include <cstddef>

#include "algorithms/datatype.h"

namespace weft::algorithms {

/// One pass over `count` elements:
///   v = local (scaled: x * scalar for kPreMulSum)      if peer == nullptr
///   v = peer  ⊕ scaled(local)                          otherwise
///   v = v / divisor  (integers, truncating)            if finalize and divisor > 1
///   out[i] = v; out2[i] = v (if out2)
/// With `streamOut`, `out` is written with non-temporal stores that bypass the caches: for an
/// output nobody reads again soon (the user's buffer in a large operation), it saves reading each
/// line before it is overwritten and keeps the caches for the slots; `streamOut2` does the same
/// for `out2`, on the conditions it states. `local` must not be null. `out` may be the same address
/// as `local` or `peer` (partial overlap is not supported); `out2` must not overlap the inputs or
/// `out`. Blocks the calling thread; any thread may call it.
struct ReduceArgs {
  const void* local = nullptr;
  const void* peer = nullptr;
  void* out = nullptr;
  void* out2 = nullptr;
  size_t count = 0;
  bool finalize = false;
  bool streamOut = false;
  /// `out2` may be written with non-temporal stores: alone, or beside a streamed `out` where it is
  /// as aligned as `out` relative to the vector size; never by the integer average.
  bool streamOut2 = false;
};

void reduce(const Reduction& reduction, const ReduceArgs& args);

/// Copies `bytes` from `src` to `out` and, if not null, `out2` (`out` may equal `src`). Uses the C
/// library's memcpy, itself chosen for the CPU, or with `streamOut` (`streamOut2`) the kernels'
/// non-temporal stores into `out` (`out2`), as in ReduceArgs; with two outputs it goes block by
/// block, so that `src` is read from memory once.
void copyTo(const void* src, void* out, void* out2, size_t bytes, bool streamOut = false, bool streamOut2 = false);

}  // namespace weft::algorithms
