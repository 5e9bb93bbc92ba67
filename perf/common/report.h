#pragma once
// The benchmark's output, in nccl-tests' format: header lines, the results table, the footer.
// Only the main rank (rank 0, thread 0) prints; every method is a no-op elsewhere.

#include <cstddef>
#include <cstdint>
#include <string>

namespace weft::perf {

/// nccl-tests' way of fitting value into width characters: two decimals while they fit, then one,
/// then none, then scientific notation.
std::string formatFitted(double value, int width);

class Report {
 public:
  explicit Report(bool active) : active_(active) {}

  bool active() const { return active_; }

  /// printf to stdout when active.
  void line(const char* format, ...) const __attribute__((format(printf, 2, 3)));

  /// The three heading lines of the table (with "cputime" for -C, a timestamp column for -S).
  void tableHeading(bool cpuTime, bool timestamps) const;

  /// The first columns of a table row.
  void rowStart(size_t bytes, size_t count, const char* typeName, const char* opName, int root) const;

  /// One out-of-place or in-place group of columns. checked false prints "N/A" for #wrong.
  void rowResult(double microseconds, double algBw, double busBw, bool checked, int64_t wrong,
                 bool timestamp) const;

  void rowEnd() const;

 private:
  bool active_;
};

}  // namespace weft::perf
