#include "perf/compare/sweep.h"

#include <getopt.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace weft::perf::compare {
namespace {

// nccl-tests' size syntax: a number with an optional K, M or G suffix (powers of 1024); 0 when
// text is not a size.
size_t parseBytes(const char* text) {
  char* end = nullptr;
  double value = std::strtod(text, &end);
  if (end == text || value < 0) return 0;
  double unit = 1;
  switch (*end) {
    case 'K': case 'k': unit = 1024.0; ++end; break;
    case 'M': case 'm': unit = 1024.0 * 1024; ++end; break;
    case 'G': case 'g': unit = 1024.0 * 1024 * 1024; ++end; break;
    default: break;
  }
  return *end == '\0' ? static_cast<size_t>(value * unit) : 0;
}

void printUsage(const char* program, const char* summary, ExtraFlags extra) {
  std::printf("%s: %s\nUSAGE: %s\n", program, summary, program);
  std::printf("\t[-b,--minbytes <min size in bytes>] (default 8)\n");
  std::printf("\t[-e,--maxbytes <max size in bytes>] (default 256M)\n");
  std::printf("\t[-f,--stepfactor <increment factor>] (default 2)\n");
  std::printf("\t[-n,--iters <iteration count>] (default 20)\n");
  std::printf("\t[-w,--warmup_iters <warmup iteration count>] (default 5)\n");
  if (extra.ranks) std::printf("\t[-p,--ranks <processes>] (default 2)\n");
  if (extra.store) std::printf("\t--store <directory> (required: an empty directory every rank can reach)\n");
  std::printf("\t[-h,--help]\n");
}

// all_reduce_perf's table with its out-of-place columns only: the same columns at the same places.
void printHeading() {
  std::printf("#\n");
  std::printf("# %10s  %12s  %8s  %6s  %6s           out-of-place          \n", "", "", "", "", "");
  std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size", "count", "type", "redop",
              "root", "time", "algbw", "busbw", "#wrong");
  std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)", "(elements)", "", "", "",
              "(us)", "(GB/s)", "(GB/s)", "");
}

void printRow(size_t bytes, const RowLabels& labels, double microseconds, double algBw, double busBw,
              int64_t wrong) {
  std::printf("%12zu  %12zu  %8s  %6s  %6i  %7.2f  %6.2f  %6.2f  %6lld\n", bytes, bytes / labels.elementSize,
              labels.type, labels.op, -1, microseconds, algBw, busBw, static_cast<long long>(wrong));
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// What is wrong with parsed options, or "" when nothing is.
std::string optionProblem(const SweepOptions& options, ExtraFlags extra) {
  if (options.minBytes == 0 || options.maxBytes < options.minBytes) {
    return "sizes must satisfy 0 < -b <= -e (nccl-tests' syntax: 8, 64K, 256M, 1G)";
  }
  if (options.stepFactor < 2) return "-f must be 2 or more";
  if (options.iters < 1 || options.warmupIters < 0) return "-n must be 1 or more and -w 0 or more";
  if (extra.ranks && options.ranks < 1) return "-p must be 1 or more";
  if (extra.store && options.store.empty()) {
    return "--store DIR is required: an empty directory every rank can reach (e.g. --store $(mktemp -d))";
  }
  return "";
}

}  // namespace

bool parseSweepOptions(int argc, char** argv, const char* summary, ExtraFlags extra, SweepOptions* options,
                       int* exitCode) {
  static const option kLongOptions[] = {
      {"minbytes", required_argument, nullptr, 'b'}, {"maxbytes", required_argument, nullptr, 'e'},
      {"stepfactor", required_argument, nullptr, 'f'}, {"iters", required_argument, nullptr, 'n'},
      {"warmup_iters", required_argument, nullptr, 'w'}, {"ranks", required_argument, nullptr, 'p'},
      {"store", required_argument, nullptr, 's'}, {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0}};
  const char* program = argv[0];
  std::string problem;
  optind = 1;
  for (int c = 0; problem.empty() && (c = getopt_long(argc, argv, "b:e:f:n:w:p:h", kLongOptions, nullptr)) != -1;) {
    switch (c) {
      case 'b': options->minBytes = parseBytes(optarg); break;
      case 'e': options->maxBytes = parseBytes(optarg); break;
      case 'f': options->stepFactor = std::strtoul(optarg, nullptr, 0); break;
      case 'n': options->iters = std::atoi(optarg); break;
      case 'w': options->warmupIters = std::atoi(optarg); break;
      case 'p':
        options->ranks = std::atoi(optarg);
        if (!extra.ranks) problem = "-p is not an option of this program";
        break;
      case 's':
        options->store = optarg;
        if (!extra.store) problem = "--store is not an option of this program";
        break;
      case 'h':
        printUsage(program, summary, extra);
        *exitCode = 0;
        return false;
      default: problem = "unknown option"; break;
    }
  }
  if (problem.empty() && optind < argc) problem = std::string("unexpected argument '") + argv[optind] + "'";
  if (problem.empty()) problem = optionProblem(*options, extra);
  if (problem.empty()) return true;
  std::fprintf(stderr, "%s: %s\n", program, problem.c_str());
  printUsage(program, summary, extra);
  *exitCode = 2;
  return false;
}

int runSweep(const SweepOptions& options, const std::string& title, SweepTarget& target) {
  setlinebuf(stdout);
  const bool prints = target.rank() == 0;
  if (prints) {
    std::printf("%s\n", title.c_str());
    std::printf("# ranks %d minBytes %zu maxBytes %zu step: %zu(factor) warmup iters: %d iters: %d validation: 1\n",
                target.ranks(), options.minBytes, options.maxBytes, options.stepFactor,
                options.warmupIters, options.iters);
    printHeading();
  }
  int64_t wrongTotal = 0;
  for (size_t bytes = options.minBytes; bytes <= options.maxBytes; bytes *= options.stepFactor) {
    for (int iter = 0; iter < options.warmupIters; ++iter) {
      if (!target.runOnce(bytes, iter)) return 1;
    }
    target.barrier();
    const auto start = std::chrono::steady_clock::now();
    for (int iter = 0; iter < options.iters; ++iter) {
      if (!target.runOnce(bytes, iter)) return 1;
    }
    const double seconds = secondsSince(start) / options.iters;
    const double meanSeconds = target.sumOverRanks(seconds) / target.ranks();
    const double algBw = static_cast<double>(bytes) / 1.0e9 / meanSeconds;
    const auto wrong = static_cast<int64_t>(target.sumOverRanks(static_cast<double>(target.checkOnce(bytes))));
    wrongTotal += wrong;
    const double busBw = algBw * target.busBandwidthFactor();
    if (prints) printRow(bytes, target.labels(), meanSeconds * 1.0e6, algBw, busBw, wrong);
    if (bytes > options.maxBytes / options.stepFactor) break;  // the next step would overflow
  }
  if (prints) {
    std::printf("# %-20s : %lld %s\n#\n", "Out of bounds values", static_cast<long long>(wrongTotal),
                wrongTotal != 0 ? "FAILED" : "OK");
  }
  return wrongTotal == 0 ? 0 : 1;
}

size_t iterationOffset(size_t bytes, size_t maxBytes, int iter) {
  size_t steps = bytes > 0 ? maxBytes / bytes : 1;
  if (steps == 0) steps = 1;
  return bytes * (static_cast<size_t>(iter) % steps);
}

TouchedBuffer::TouchedBuffer(size_t bytes) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t rounded = bytes == 0 ? page : (bytes + page - 1) / page * page;
  void* data = nullptr;
  if (posix_memalign(&data, page, rounded) != 0) {
    std::fprintf(stderr, "cannot allocate %zu bytes: free memory or lower -e\n", rounded);
    std::exit(1);
  }
  std::memset(data, 0, rounded);
  data_ = static_cast<char*>(data);
}

TouchedBuffer::~TouchedBuffer() { std::free(data_); }

float checkInput(int rank, size_t index) {
  return static_cast<float>((index * 13 + static_cast<size_t>(rank) * 7) % 127);
}

float checkSum(int ranks, size_t index) {
  float sum = 0;
  for (int rank = 0; rank < ranks; ++rank) sum += checkInput(rank, index);
  return sum;
}

void fillCheckInput(float* data, size_t count, int rank) {
  for (size_t i = 0; i < count; ++i) data[i] = checkInput(rank, i);
}

int64_t countWrongSums(const float* data, size_t count, int ranks) {
  int64_t wrong = 0;
  for (size_t i = 0; i < count; ++i) wrong += data[i] != checkSum(ranks, i) ? 1 : 0;
  return wrong;
}

double allReduceBusFactor(int ranks) { return 2.0 * (ranks - 1) / ranks; }

}  // namespace weft::perf::compare
