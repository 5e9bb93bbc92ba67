#pragma once
// -I: the statistics of the individual iterations of one measurement, as nccl-tests computes them.

#include <vector>

namespace weft::perf {

struct IterationStats {
  double min = 0;
  double max = 0;
  double average = 0;
  double p50 = 0;  // the upper median
  double p95 = 0;  // nearest-rank percentiles: with fewer than 100 samples p99 may equal max
  double p99 = 0;
  double stdev = 0;  // population standard deviation
  /// stdev as a percentage of the average (0 when the average is 0).
  double cvPercent() const { return average > 0 ? stdev / average * 100.0 : 0.0; }
};

/// Statistics of seconds (at least one sample), in the samples' unit.
IterationStats iterationStats(std::vector<double> seconds);

/// Per iteration, the largest time over the rows (one row per process, all of the same length).
std::vector<double> maxOverRows(const std::vector<std::vector<double>>& rows);

}  // namespace weft::perf
