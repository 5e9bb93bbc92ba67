#include "perf/common/run_header.h"

#include <dlfcn.h>
#include <errno.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "nccl.h"

#ifndef WEFT_PERF_VERSION
#define WEFT_PERF_VERSION "dev"
#endif

namespace weft::perf {
namespace {

std::string loadedLibraryPath() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&ncclGetVersion), &info) != 0 && info.dli_fname != nullptr) {
    return info.dli_fname;
  }
  return "(unknown)";
}

std::string versionText(int code) {
  int major = code >= 10000 ? code / 10000 : code / 1000;
  int minor = code >= 10000 ? code % 10000 / 100 : code % 1000 / 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

std::string cpuModel() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    size_t colon = line.find(':');
    if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
  }
  return "host memory";
}

}  // namespace

void printRunHeader(const Report& report, const Options& o, int libraryVersion) {
  report.line("# nccl-tests version weft-%s nccl-headers=%d nccl-library=%d\n", WEFT_PERF_VERSION,
              NCCL_VERSION_CODE, libraryVersion);
  report.line("#  Using libnccl: %s\n", loadedLibraryPath().c_str());
  report.line("#  NCCL version %s\n", versionText(libraryVersion).c_str());
  report.line("# Collective test starting: %s\n", program_invocation_short_name);
  report.line(
      "# nThread %d nGpus %d minBytes %ld maxBytes %ld step: %ld(%s) warmup iters: %d iters: %d agg "
      "iters: %d validation: %d graph: %d unalign: %d\n",
      o.nThreads, o.nGpus, static_cast<long>(o.minBytes), static_cast<long>(o.maxBytes),
      static_cast<long>(o.stepFactor > 1 ? o.stepFactor : o.stepBytes),
      o.stepFactor > 1 ? "factor" : "bytes", o.warmupIters, o.iters, o.aggIters, o.check, 0, o.unalign);
  if (o.blocking == 1) report.line("# Blocking Enabled: wait for completion and barrier after each collective \n");
  if (o.blocking > 1) report.line("# Blocking Enabled: wait for completion after each collective (no barrier) \n");
  if (o.perIterationTiming) {
    report.line("# Per-Iteration Report: host clock timing; i_* uses max over process rows \n");
  }
  if (o.parallelInit) report.line("# Parallel Init Enabled: threads call into NcclInitRank concurrently \n");
  for (const std::string& note : o.notes) report.line("%s\n", note.c_str());
  report.line("#\n");
  report.line("# Using devices\n");
}

std::string deviceLines(const Options& o, const ProcessGroup& group, int color) {
  std::string lines;
  const std::string host = shortHostName();
  const std::string model = cpuModel();
  for (int t = 0; t < o.nThreads; ++t) {
    char line[512];
    std::snprintf(line, sizeof(line), "#  Rank %2d Group %2d Pid %6d on %10s device %2d [host] %s\n",
                  group.rank() * o.nThreads + t, color, static_cast<int>(getpid()), host.c_str(),
                  group.localRank() * o.nThreads + t, model.c_str());
    lines += line;
  }
  return lines;
}

}  // namespace weft::perf
