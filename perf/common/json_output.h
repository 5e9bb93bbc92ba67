#pragma once
// -J file.json: nccl-tests' JSON output (its format version 2), for the scripts that read it. One
// object, written by the main rank when the run ends (or fails):
//   version, start_time, args, env, nccl_version,
//   config {nthreads, ngpus, minimum_bytes, maximum_bytes, step_factor | step_bytes, warmup_iters,
//           iterations, aggregated_iterations, validation, graph, blocking_collectives,
//           per_iter_timing, parallel_init, devices [{rank, group, pid, hostname, device,
//           device_hex, device_info}]},
//   results [{size, count, type, redop, root, out_of_place {time | cpu_time, alg_bw, bus_bw,
//             nwrong}, [out_of_place_per_iter {...}], in_place {...}, [in_place_per_iter {...}],
//             actual_iterations, experiment_name}],
//   out_of_bounds {count, okay}, average_bus_bandwidth {bandwidth, okay}, errors [...], end_time.
// As in nccl-tests, booleans are the strings "true" and "false", root is the table's "%6i" text,
// nwrong is null where the table says N/A and a NaN is the string "nan".

#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "perf/common/iteration_stats.h"
#include "perf/common/options.h"

namespace weft::perf {

/// One measurement (one out-of-place or in-place group of columns of a table row).
struct Measurement {
  bool inPlace = false;
  double microseconds = 0;
  double algBw = 0;
  double busBw = 0;
  bool checked = true;  // false: the table shows N/A for #wrong
  int64_t wrong = 0;
};

/// Every method may be called from any thread (one at a time is enforced inside); after finish()
/// the others do nothing.
class JsonOutput {
 public:
  /// Creates path for writing only if it does not exist, else path.0, path.1, ... (as nccl-tests
  /// does), and prints "# Writing JSON output to <file>". Prints "# skipping json output; <file>
  /// not accessible" and returns nullptr when it cannot create one.
  static std::unique_ptr<JsonOutput> create(const std::string& path);
  ~JsonOutput();
  JsonOutput(const JsonOutput&) = delete;
  JsonOutput& operator=(const JsonOutput&) = delete;

  /// The run: its command line, environment (NULL-terminated) and the library's version code.
  void begin(int argc, char** argv, char** environment, int ncclVersion);
  /// The "config" object, with one device per "#  Rank ..." line of deviceLines, and an empty
  /// "results" list.
  void config(const Options& options, const std::string& deviceLines);

  /// A result row: its first columns, one or two measurements (with their per-iteration
  /// statistics under -I), then the iteration count.
  void rowStart(size_t bytes, size_t count, const char* typeName, const char* opName, int root);
  void rowResult(const Measurement& measurement, bool cpuTime);
  void rowIterations(bool inPlace, const IterationStats& seconds, const std::vector<double>& times,
                     const std::vector<std::vector<double>>& processRows);
  void rowEnd(int iterations);

  /// The footer: wrong values over the run and the average bus bandwidth, checked against minBw
  /// (NCCL_TESTS_MIN_BW; negative: unchecked).
  void summary(int64_t wrongValues, double busBw, double minBw);
  /// The "errors" list: lastError, ncclGetLastError's text.
  void errors(const char* lastError);
  /// Adds end_time, closes an unfinished row or list, writes the document and closes the file.
  void finish();

 private:
  struct Document;
  JsonOutput(std::FILE* file, std::unique_ptr<Document> document);

  std::mutex mutex_;
  std::FILE* file_;
  std::unique_ptr<Document> document_;
};

}  // namespace weft::perf
