#pragma once
// NCCL_TESTS_SPLIT_MASK and NCCL_TESTS_SPLIT: under mpirun, nccl-tests splits the processes into
// groups ("colors") that each run the benchmark on a communicator of their own, at the same time.

#include <string>

namespace weft::perf {

/// The color of process proc (its MPI rank): with splitMask (NCCL_TESTS_SPLIT_MASK, hexadecimal,
/// 0x optional) proc & mask; else with split (NCCL_TESTS_SPLIT) one of AND<n>, OR<n>, MOD<n>,
/// DIV<n> (or &<n>, |<n>, %<n>, /<n>; case-insensitive; n decimal, 0x hexadecimal or 0b binary)
/// applied to proc; else 0. Either text may be nullptr or empty (unset). Returns false with a
/// message in *error when a set value is not of that form or divides by zero.
bool splitColor(int proc, const char* splitMask, const char* split, int* color, std::string* error);

}  // namespace weft::perf
