#pragma once
// `weft tune --calibrate`: measures this machine's hops and writes the tuner's constants as a
// tune file (algorithms/tune_file.h) for WEFT_TUNE_FILE.
//
// It runs nccl-tests' all_reduce_perf of this build (the ring, NCCL_ALGO=ring) as `ranks`
// processes on this host, Weft's launch without MPI, over shared memory with Simple and with LL
// (NCCL_PROTO), and with NCCL_SHM_DISABLE=1 (the network), and fits the ring's model to each
// sweep: the smallest size's time is 2(n-1) latencies, the largest one's adds 2(n-1)/n S at the
// bandwidth. Each kind of hop is measured on one channel and on four: what a channel adds to a
// step, and, where four move clearly more than one, their peak bandwidth. Each sweep runs
// `repeats` times and each size's median is fitted: on a busy host one run's step can be 1.5x
// another's. The ranks run as a local job (local_ranks.h): a rank that fails ends the sweep at
// once, a rank that waits 60 s without progress fails (WEFT_TIMEOUT), and a sweep that outlives
// its deadline is ended, each with every rank's output in the message.

#include <string>

namespace weft::tools {

struct CalibrationOptions {
  int ranks = 2;
  std::string output = "weft-tune.json";
  std::string perfDir;  // where all_reduce_perf is; default: ../perf beside this program
  int iterations = 50;
  int repeats = 3;  // runs of each sweep; each size's median time is fitted
};

/// Measures, writes options.output and prints what it found; the exit code.
int runCalibration(const CalibrationOptions& options);

}  // namespace weft::tools
