#pragma once
// What each rank sends: deterministic in (seed, rank, index), so that every rank can rebuild any
// rank's input to compute what it must receive.
//
// Inputs of reductions are built so that every order of reduction gives the same bits:
//  - integers: any value (wrapping sum and product are order-independent);
//  - floats, sum/avg/PreMulSum: integers k with |k| <= 2^precision / nranks, so that every partial
//    sum, in any order and scaled by any power of two, is exact in the type (avg: k >= 0, so that
//    no sum cancels; see ulpTolerance in reference.h);
//  - floats, prod: values in {-2, -1, 1, 2} (products are signed powers of two, at most 2^nranks);
//  - max/min: any finite value except -0 (whose order against +0 is not defined).

#include <cstddef>
#include <cstdint>

#include "tests/multirank/element_types.h"
#include "tests/multirank/reduction.h"

namespace weft::multirank {

/// Writes elements [first, first + count) of `rank`'s input to `out` (count elements).
void fillReductionInput(const ElementType& type, const Reduction& op, int nranks, int rank,
                        uint64_t seed, size_t first, size_t count, void* out);

/// Writes elements [first, first + count) of `rank`'s input for data movement: any bits.
void fillArbitraryInput(const ElementType& type, int rank, uint64_t seed, size_t first,
                        size_t count, void* out);

/// A 64-bit mix of its arguments (splitmix64 finalizer); the suite's only source of randomness.
uint64_t mixBits(uint64_t seed, uint64_t a, uint64_t b);

}  // namespace weft::multirank
