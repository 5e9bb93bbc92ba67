#pragma once
// Command-line options of the benchmarks: nccl-tests' flags, defaults and messages.

#include <cstddef>
#include <string>
#include <vector>

namespace weft::perf {

/// How the per-rank times of one measurement become the reported time (-a).
enum class TimeAggregation { kRank0 = 0, kAverage = 1, kMinimum = 2, kMaximum = 3 };

struct Options {
  int nThreads = 1;
  int nGpus = 1;
  size_t minBytes = 32 * 1024 * 1024;
  size_t maxBytes = 32 * 1024 * 1024;
  size_t stepBytes = 1 * 1024 * 1024;
  size_t stepFactor = 1;
  int iters = 20;
  int aggIters = 1;
  int warmupIters = 1;
  int runCycles = 1;  // 0: until killed
  int parallelInit = 0;
  int check = 1;      // check iterations per size (0: no data check)
  int opIndex = 0;    // into allOps(); -1: all
  int typeIndex = 7;  // into allTypes() (float); -1: all
  int root = 0;
  int blocking = 0;   // 1: complete and barrier after every call; 2: complete, no barrier
  int timeoutSeconds = 0;
  int reportCpuTime = 0;
  int reportTimestamps = 0;
  int perIterationTiming = 0;  // -I: per-iteration statistics columns
  int unalign = 0;             // -u: buffers start this many elements past their allocation
  std::string outputFile;      // -J: nccl-tests' JSON output (when it ends in .json)
  TimeAggregation aggregation = TimeAggregation::kAverage;
  int localRegister = 0;  // 1: ncclCommRegister, 2: symmetric ncclCommWindowRegister
  /// "# ... is ignored on host memory" lines for flags that only mean something on a GPU.
  std::vector<std::string> notes;
};

/// What main does after parsing.
struct ParseOutcome {
  bool run = true;   // false: exit now with exitCode (help, bad arguments)
  int exitCode = 0;
};

/// Parses argv into options, printing nccl-tests' messages for bad values (invalid -o/-d fall back
/// to sum/float with a message, as nccl-tests does).
ParseOutcome parseOptions(int argc, char** argv, Options* options);

/// nccl-tests' size syntax: a number with an optional K, M or G suffix (powers of 1024).
/// Returns a negative value when text is not a size.
double parseSize(const char* text);

}  // namespace weft::perf
