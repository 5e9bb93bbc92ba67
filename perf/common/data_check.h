#pragma once
// Test data that makes results exact: every input is a small integer, chosen per (type, operator,
// rank count) so that any order of combining the ranks' values gives the same bits:
//   sum, min, max, mulsum  integers bounded so that every partial sum stays exactly representable
//                          (2^24 for float, 2^11 for half, 2^8 for bfloat16, 16 for e4m3, 8 for
//                          e5m2, the type's range for integers); with more ranks than that bound
//                          allows, at most "bound" ranks hold a 1 for each element, the rest 0;
//   prod                   values in {1, 2} (and their negatives for floats) with a bounded
//                          number of 2s per element, so every partial product is a power of two;
//   avg                    non-negative values as for sum. Integer types: exact (the sum divided
//                          by the rank count, truncated). Floating types: within 2 ulps. With a
//                          power-of-two rank count every way of computing it (sum then divide, or
//                          scale each term by 1/nranks then sum) is exact; otherwise scaling each
//                          term rounds, so each element gets one non-zero contributor, which keeps
//                          either way within 2 ulps of the rounded true average.
// Expected results are computed on the host from the same generator: exactly, in 64-bit integers
// or in double, then rounded once to the element type.

#include <cstddef>
#include <cstdint>

#include "nccl.h"
#include "perf/common/data_types.h"

namespace weft::perf {

/// What one check is about: the values depend on all four fields.
struct DataSpec {
  ncclDataType_t type;
  TestOp op;
  int nranks;
  uint64_t seed;
};

/// Fills count elements with rank's input values for global element indices firstIndex...
void fillInput(void* buffer, size_t count, size_t firstIndex, const DataSpec& spec, int rank);

/// Fills spec.nranks blocks of `block` elements, block r with rank r's inputs at global indices
/// r*block... (what AllGather leaves everywhere and Gather at the root).
void fillGathered(void* buffer, size_t block, const DataSpec& spec);

/// Fills count elements with the reduction over all spec.nranks ranks of their inputs at global
/// indices firstIndex... (what AllReduce, Reduce and ReduceScatter produce).
void fillReduced(void* buffer, size_t count, size_t firstIndex, const DataSpec& spec);

/// How many of count elements of actual differ from expected: bit for bit, or beyond the
/// tolerance above for avg on floating types.
int64_t countWrong(const void* actual, const void* expected, size_t count, const DataSpec& spec);

/// Writes rank's mulsum scalar, as one element of type, to out (8 bytes are enough).
void writePreMulScalar(ncclDataType_t type, int rank, void* out);

}  // namespace weft::perf
