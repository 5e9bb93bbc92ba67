#pragma once
// The final division of an integer average (ncclAvg on integer types), applied to a reduced sum.

#include <cstddef>
#include <cstdint>

#include "algorithms/datatype.h"

namespace weft::algorithms {

/// Divides the `count` elements of `type` at `data` in place by `divisor` (at least 1),
/// truncating toward zero; signed types divide the signed value (-7 / 2 == -3). Leaves floating
/// types unchanged.
void divideIntegers(DataType type, void* data, size_t count, uint64_t divisor);

}  // namespace weft::algorithms
