#pragma once
// What a reduction must produce, computed independently of the runtime.
//
// Arithmetic of the reference, folded over ranks 0, 1, ..., n-1:
//  - integers: wrapping sum and product (in the unsigned type), max/min by the type's signedness;
//    avg is the wrapped sum divided by nranks, truncated toward zero (signed types: the sum read
//    as signed); PreMulSum multiplies each input by the scalar (wrapping), then sums.
//  - floats: computed in float (double for float64) and rounded to the type after every
//    operation (half, bfloat16, fp8: round to nearest even; fp8 saturates). avg premultiplies each
//    input by 1/nranks rounded to the type, then sums; PreMulSum premultiplies by its scalar.
// With the inputs of tests/multirank/test_inputs.h every order gives these same bits, except avg
// on floats when nranks is not a power of two: 1/nranks is not exact, each premultiplied input
// is rounded, and the order of the sum changes the last bits; ulpTolerance() allows for that.

#include <cstddef>
#include <optional>
#include <vector>

#include "tests/multirank/element_types.h"
#include "tests/multirank/reduction.h"

namespace weft::multirank {

/// out[i] = inputs[0][i] op inputs[1][i] op ... for i < count; inputs holds one buffer per rank.
void reduceReference(const ElementType& type, const Reduction& op,
                     const std::vector<const void*>& inputs, size_t count, void* out);

/// How many units in the last place a result may differ from the reference: for avg on floats
/// with a non-power-of-two nranks, nranks - 1 (each of the nranks - 1 additions of rounded,
/// premultiplied inputs may round the other way in another order; 2 ulp at 3 ranks, which also
/// covers summing exactly and dividing once), otherwise 0: bit-exact. The inputs of avg are not
/// negative, so no sum cancels (cancellation would turn these roundings into many ulps).
int ulpTolerance(const ElementType& type, const Reduction& op, int nranks);

struct Mismatch {
  size_t firstIndex;
  size_t count;  // elements that differ beyond the tolerance
};

/// Compares `count` elements of `got` and `want`: equal bits, or within `ulps` on floats.
std::optional<Mismatch> findMismatch(const ElementType& type, const void* got, const void* want,
                                     size_t count, int ulps);

/// The bits of `value` in `type`, for ncclRedOpCreatePreMulSum's scalar.
uint64_t scalarBits(const ElementType& type, double value);

}  // namespace weft::multirank
