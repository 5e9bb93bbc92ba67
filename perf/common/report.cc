#include "perf/common/report.h"

#include <cstdarg>
#include <cstdio>
#include <ctime>

namespace weft::perf {

std::string formatFitted(double value, int width) {
  int digits = 0;  // digits before the decimal point
  for (double bound = 1; value >= bound && digits < 400; bound *= 10) ++digits;
  char text[64];
  if (digits < width - 2) {
    std::snprintf(text, sizeof(text), "%*.2f", width, value);
  } else if (digits < width - 1) {
    std::snprintf(text, sizeof(text), "%*.1f", width, value);
  } else if (digits < width + 1) {
    std::snprintf(text, sizeof(text), "%*.0f", width, value);
  } else if (width >= 7) {
    std::snprintf(text, sizeof(text), "%*.1e", width, value);
  } else {
    std::snprintf(text, sizeof(text), "%*.0e", width, value);
  }
  return text;
}

void Report::line(const char* format, ...) const {
  if (!active_) return;
  va_list args;
  va_start(args, format);
  std::vprintf(format, args);
  va_end(args);
}

void Report::tableHeading() const {
  const char* time = layout_.cpuTime ? "cputime" : "time";
  const char* stampLabel = layout_.timestamps ? "timestamp" : "";
  const char* stampFormat = layout_.timestamps ? "%Y-%m-%d %H:%M:%S" : "";
  const int stampWidth = layout_.timestamps ? 19 : 0;
  line("#\n");
  if (layout_.perIteration) {
    line("# %10s  %12s  %8s  %6s  %6s              out-of-place (+ per-iteration)                    "
         "            in-place (+ per-iteration)\n",
         "", "", "", "", "");
    line("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s  %7s  %6s  %6s  %6s  "
         "%7s  %7s  %7s  %7s %*s\n",
         "size", "count", "type", "redop", "root", time, "algbw", "busbw", "#wrong", "i_min", "i_max",
         "i_p99", "i_cv%", time, "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99", "i_cv%",
         stampWidth, stampLabel);
    line("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s  %7s  %6s  %6s  %6s  "
         "%7s  %7s  %7s  %7s %*s\n",
         "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(%)",
         "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(%)", stampWidth, stampFormat);
    return;
  }
  line("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n",
       "", "", "", "", "");
  line("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n", "size", "count",
       "type", "redop", "root", time, "algbw", "busbw", "#wrong", time, "algbw", "busbw", "#wrong",
       stampWidth, stampLabel);
  line("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n", "(B)",
       "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "",
       stampWidth, stampFormat);
}

void Report::rowStart(size_t bytes, size_t count, const char* typeName, const char* opName,
                      int root) const {
  line("%12li  %12li  %8s  %6s  %6i", static_cast<long>(bytes), static_cast<long>(count), typeName,
       opName, root);
  if (json_ != nullptr) json_->rowStart(bytes, count, typeName, opName, root);
}

void Report::rowResult(const Measurement& m) const {
  std::string time = formatFitted(m.microseconds, 7);
  std::string alg = formatFitted(m.algBw, 6);
  std::string bus = formatFitted(m.busBw, 6);
  if (m.checked) {
    line("  %7s  %6s  %6s  %6g", time.c_str(), alg.c_str(), bus.c_str(), static_cast<double>(m.wrong));
  } else {
    line("  %7s  %6s  %6s    N/A", time.c_str(), alg.c_str(), bus.c_str());
  }
  if (m.inPlace && layout_.timestamps && !layout_.perIteration) timestamp();
  if (json_ != nullptr) json_->rowResult(m, layout_.cpuTime);
}

void Report::rowIterations(bool inPlace, const std::vector<double>& times,
                           const std::vector<std::vector<double>>& processRows) const {
  if (!active_ || times.empty()) return;
  const IterationStats stats = iterationStats(times);
  line("  %7s  %7s  %7s  %7s", formatFitted(stats.min * 1e6, 7).c_str(),
       formatFitted(stats.max * 1e6, 7).c_str(), formatFitted(stats.p99 * 1e6, 7).c_str(),
       formatFitted(stats.cvPercent(), 7).c_str());
  if (inPlace && layout_.timestamps) timestamp();
  if (json_ != nullptr) json_->rowIterations(inPlace, stats, times, processRows);
}

void Report::rowEnd(int iterations) const {
  line("\n");
  if (json_ != nullptr) json_->rowEnd(iterations);
}

void Report::summary(int64_t wrongValues, double busBw, double minBw, const char* program) const {
  const char* bandwidthVerdict = minBw < 0 ? "" : (busBw < minBw * 0.9 ? "FAILED" : "OK");
  line("# %-20s : %d %s\n", "Out of bounds values", static_cast<int>(wrongValues),
       wrongValues != 0 ? "FAILED" : "OK");
  line("# %-20s : %g %s\n", "Avg bus bandwidth", busBw, bandwidthVerdict);
  line("#\n");
  line("# Collective test concluded: %s\n", program);
  if (json_ != nullptr) json_->summary(wrongValues, busBw, minBw);
}

void Report::timestamp() const {
  char stamp[64];
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", &local);
  line("%21s", stamp);
}

}  // namespace weft::perf
