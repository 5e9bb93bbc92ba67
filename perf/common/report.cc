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

void Report::tableHeading(bool cpuTime, bool timestamps) const {
  const char* time = cpuTime ? "cputime" : "time";
  const char* stampLabel = timestamps ? "timestamp" : "";
  const char* stampFormat = timestamps ? "%Y-%m-%d %H:%M:%S" : "";
  const int stampWidth = timestamps ? 19 : 0;
  line("#\n");
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
}

void Report::rowResult(double microseconds, double algBw, double busBw, bool checked, int64_t wrong,
                       bool timestamp) const {
  std::string time = formatFitted(microseconds, 7);
  std::string alg = formatFitted(algBw, 6);
  std::string bus = formatFitted(busBw, 6);
  if (checked) {
    line("  %7s  %6s  %6s  %6g", time.c_str(), alg.c_str(), bus.c_str(), static_cast<double>(wrong));
  } else {
    line("  %7s  %6s  %6s    N/A", time.c_str(), alg.c_str(), bus.c_str());
  }
  if (timestamp) {
    char stamp[64];
    std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    std::strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", &local);
    line("%21s", stamp);
  }
}

void Report::rowEnd() const { line("\n"); }

}  // namespace weft::perf
