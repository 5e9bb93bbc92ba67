#pragma once
// The shared driver of the nccl-tests-compatible benchmarks: parses the command line, starts the
// processes' and threads' ranks, runs the size sweep for each type and operator, checks data and
// prints the table. A binary is one Collective plus main() { return benchmarkMain(...); }.

#include "perf/common/collective.h"

namespace weft::perf {

/// Runs the benchmark of collective; returns the process exit status: 0 on success, nccl-tests'
/// error numbers otherwise (3: an NCCL call failed, 4: -T timeout, 8: wrong data or -- with
/// NCCL_TESTS_MIN_BW -- too little bandwidth, 255: bad arguments).
int benchmarkMain(int argc, char** argv, const Collective& collective);

}  // namespace weft::perf
