#include "perf/common/iteration_stats.h"

#include <algorithm>
#include <cmath>

namespace weft::perf {
namespace {

size_t percentileIndex(size_t n, size_t percentile) {
  return std::min(n - 1, (n * percentile + 99) / 100 - 1);
}

}  // namespace

IterationStats iterationStats(std::vector<double> seconds) {
  std::sort(seconds.begin(), seconds.end());
  const size_t n = seconds.size();
  IterationStats stats;
  stats.min = seconds.front();
  stats.max = seconds.back();
  stats.p50 = seconds[n / 2];
  stats.p95 = seconds[percentileIndex(n, 95)];
  stats.p99 = seconds[percentileIndex(n, 99)];
  double sum = 0;
  for (double s : seconds) sum += s;
  stats.average = sum / static_cast<double>(n);
  double squares = 0;
  for (double s : seconds) squares += (s - stats.average) * (s - stats.average);
  stats.stdev = std::sqrt(squares / static_cast<double>(n));
  return stats;
}

std::vector<double> maxOverRows(const std::vector<std::vector<double>>& rows) {
  std::vector<double> maxima = rows.front();
  for (const std::vector<double>& row : rows) {
    for (size_t i = 0; i < maxima.size() && i < row.size(); ++i) maxima[i] = std::max(maxima[i], row[i]);
  }
  return maxima;
}

}  // namespace weft::perf
