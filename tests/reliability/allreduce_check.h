#pragma once
// The collective every reliability test runs after its fault: an allreduce whose result is checked
// element by element, so that "init succeeded" also means "the communicator moves the right bytes".

#include <cstddef>
#include <string>

#include "nccl.h"

namespace weft::reliability {

/// A float sum ncclAllReduce of `count` elements on `comm`, with inputs that depend on the rank,
/// the element and `iteration` and whose sum is exact in float. Returns an empty string, or what
/// was wrong: the call's result with ncclGetLastError, or the first wrong element.
std::string allReduceAndCheck(ncclComm_t comm, int rank, int nranks, size_t count, int iteration);

}  // namespace weft::reliability
