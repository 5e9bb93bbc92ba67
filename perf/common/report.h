#pragma once
// The benchmark's output, in nccl-tests' format: header lines, the results table, the footer, and
// the same results in the -J JSON file. Only the main rank (rank 0, thread 0) reports; every
// method is a no-op elsewhere.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "perf/common/iteration_stats.h"
#include "perf/common/json_output.h"

namespace weft::perf {

/// nccl-tests' way of fitting value into width characters: two decimals while they fit, then one,
/// then none, then scientific notation.
std::string formatFitted(double value, int width);

/// The columns of the results table.
struct TableLayout {
  bool cpuTime = false;       // -C: the time columns are "cputime"
  bool timestamps = false;    // -S: a timestamp ends each row
  bool perIteration = false;  // -I: i_min, i_max, i_p99 and i_cv% follow each measurement
};

class Report {
 public:
  /// json, when not null, receives the rows too; it must outlive the report.
  Report(bool active, TableLayout layout, JsonOutput* json = nullptr)
      : active_(active), layout_(layout), json_(active ? json : nullptr) {}

  bool active() const { return active_; }

  /// printf to stdout when active.
  void line(const char* format, ...) const __attribute__((format(printf, 2, 3)));

  /// The heading lines of the table.
  void tableHeading() const;

  /// A table row: its first columns, then out-of-place and in-place results (each followed by its
  /// per-iteration statistics under -I), then the end of the row.
  void rowStart(size_t bytes, size_t count, const char* typeName, const char* opName, int root) const;
  void rowResult(const Measurement& measurement) const;
  /// times: seconds of each iteration (the largest over the processes); processRows: each
  /// process's times (several only with several processes).
  void rowIterations(bool inPlace, const std::vector<double>& times,
                     const std::vector<std::vector<double>>& processRows) const;
  void rowEnd(int iterations) const;

  /// The footer's summary lines: wrong values over the run and the average bus bandwidth, checked
  /// against minBw (NCCL_TESTS_MIN_BW; negative: unchecked).
  void summary(int64_t wrongValues, double busBw, double minBw, const char* program) const;

 private:
  void timestamp() const;

  bool active_;
  TableLayout layout_;
  JsonOutput* json_;
};

}  // namespace weft::perf
