#include "perf/common/options.h"

#include <getopt.h>
#include <libgen.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

#include "perf/common/data_types.h"

namespace weft::perf {
namespace {

// Exit status for unusable arguments; nccl-tests returns -1 from main.
constexpr int kBadArgumentsExit = 255;

long integerArgument(const char* text) { return std::strtol(text, nullptr, 0); }

int findType(const char* name) {
  auto types = allTypes();
  for (size_t i = 0; i < types.size(); ++i) {
    if (std::strcmp(name, types[i].name) == 0) return static_cast<int>(i);
  }
  if (std::strcmp(name, "all") == 0) return -1;
  std::printf("invalid type %s, defaulting to %s .. \n", name, "float");
  return 7;
}

int findOp(const char* name) {
  auto ops = allOps();
  for (size_t i = 0; i < ops.size(); ++i) {
    if (std::strcmp(name, ops[i].name) == 0) return static_cast<int>(i);
  }
  if (std::strcmp(name, "all") == 0) return -1;
  std::printf("invalid op %s, defaulting to %s .. \n", name, "sum");
  return 0;
}

void printUsage(const char* program) {
  std::printf(
      "USAGE: %s \n\t"
      "[-t,--nthreads <num threads>] \n\t"
      "[-g,--ngpus <gpus per thread>] (host memory: must be 1)\n\t"
      "[-b,--minbytes <min size in bytes>] \n\t"
      "[-e,--maxbytes <max size in bytes>] \n\t"
      "[-i,--stepbytes <increment size>] \n\t"
      "[-f,--stepfactor <increment factor>] \n\t"
      "[-n,--iters <iteration count>] \n\t"
      "[-m,--agg_iters <aggregated iteration count>] \n\t"
      "[-w,--warmup_iters <warmup iteration count>] \n\t"
      "[-N,--run_cycles <cycle count> run & print each cycle (default: 1; 0=infinite)] \n\t"
      "[-p,--parallel_init <0/1>] \n\t"
      "[-c,--check <check iteration count>] \n\t"
      "[-o,--op <sum/prod/min/max/avg/mulsum/all>] \n\t"
      "[-d,--datatype <nccltype/all>] \n\t"
      "[-r,--root <root>] \n\t"
      "[-z,--blocking <0/1/2> 1=wait for completion and barrier (default behavior), 2=wait without "
      "barrier] \n\t"
      "[-y,--stream_null <0/1>] (ignored on host memory)\n\t"
      "[-T,--timeout <time in seconds>] \n\t"
      "[-G,--cudagraph <num graph launches>] (ignored on host memory)\n\t"
      "[-C,--report_cputime <0/1>] \n\t"
      "[-S,--report_timestamps <0/1> report timestamps (default 0)] \n\t"
      "[-J,--output_file <file> write output to filepath, if accessible. Infer type from suffix "
      "(only json supported presently.)] \n\t"
      "[-a,--average <0/1/2/3> report average iteration time <0=RANK0/1=AVG/2=MIN/3=MAX>] \n\t"
      "[-R,--local_register <0/1/2> enable local (1) or symmetric (2) buffer registration on "
      "send/recv buffers (default: disable (0))] \n\t"
      "[-x,--cta_policy <0/1/2>] (ignored on host memory)\n\t"
      "[-D,--device_implementation <implementation number>] (ignored on host memory)\n\t"
      "[-V,--device_cta_count <number>] (ignored on host memory)\n\t"
      "[-M,--memory <0/1>] (ignored on host memory)\n\t"
      "[-u,--unalign <index of first element> Misalign source and destination buffers (default: "
      "0)] \n\t"
      "[-I,--per_iter_timing <0/1> per-iteration timing (default: 0)] \n\t"
      "[-h,--help]\n",
      program);
}

}  // namespace

double parseSize(const char* text) {
  double size = 0;
  char suffix[2] = {0, 0};
  int fields = std::sscanf(text, "%lf %1s", &size, suffix);
  if (fields < 1) return -1.0;
  if (fields == 1) return size;
  switch (suffix[0]) {
    case 'G': case 'g': return size * 1024 * 1024 * 1024;
    case 'M': case 'm': return size * 1024 * 1024;
    case 'K': case 'k': return size * 1024;
    default: return -1.0;
  }
}

ParseOutcome parseOptions(int argc, char** argv, Options* options) {
  static const struct option kLongOptions[] = {
      {"nthreads", required_argument, nullptr, 't'},
      {"ngpus", required_argument, nullptr, 'g'},
      {"minbytes", required_argument, nullptr, 'b'},
      {"maxbytes", required_argument, nullptr, 'e'},
      {"stepbytes", required_argument, nullptr, 'i'},
      {"stepfactor", required_argument, nullptr, 'f'},
      {"iters", required_argument, nullptr, 'n'},
      {"agg_iters", required_argument, nullptr, 'm'},
      {"warmup_iters", required_argument, nullptr, 'w'},
      {"run_cycles", required_argument, nullptr, 'N'},
      {"parallel_init", required_argument, nullptr, 'p'},
      {"check", required_argument, nullptr, 'c'},
      {"op", required_argument, nullptr, 'o'},
      {"datatype", required_argument, nullptr, 'd'},
      {"root", required_argument, nullptr, 'r'},
      {"blocking", required_argument, nullptr, 'z'},
      {"stream_null", required_argument, nullptr, 'y'},
      {"timeout", required_argument, nullptr, 'T'},
      {"cudagraph", required_argument, nullptr, 'G'},
      {"report_cputime", required_argument, nullptr, 'C'},
      {"report_timestamps", required_argument, nullptr, 'S'},
      {"output_file", required_argument, nullptr, 'J'},
      {"average", required_argument, nullptr, 'a'},
      {"local_register", required_argument, nullptr, 'R'},
      {"cta_policy", required_argument, nullptr, 'x'},
      {"device_implementation", required_argument, nullptr, 'D'},
      {"device_cta_count", required_argument, nullptr, 'V'},
      {"memory", required_argument, nullptr, 'M'},
      {"memory_report", required_argument, nullptr, 'M'},  // nccl-tests' earlier name
      {"unalign", required_argument, nullptr, 'u'},
      {"per_iter_timing", required_argument, nullptr, 'I'},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  std::set<char> ignoredSeen;
  auto ignore = [&](char flag, const char* what) {
    if (ignoredSeen.insert(flag).second) {
      options->notes.push_back(std::string("# -") + flag + " (" + what + ") is ignored on host memory");
    }
  };

  optind = 1;
  for (;;) {
    int c = getopt_long(argc, argv, "t:g:b:e:i:f:n:m:w:N:p:I:c:o:d:r:z:y:T:hG:C:a:R:x:D:V:J:S:M:u:",
                        kLongOptions, nullptr);
    if (c == -1) break;
    double size = 0;
    switch (c) {
      case 't': options->nThreads = static_cast<int>(integerArgument(optarg)); break;
      case 'g': options->nGpus = static_cast<int>(integerArgument(optarg)); break;
      case 'b':
        size = parseSize(optarg);
        if (size < 0) {
          std::fprintf(stderr, "invalid size specified for 'minbytes'\n");
          return {false, kBadArgumentsExit};
        }
        options->minBytes = static_cast<size_t>(size);
        break;
      case 'e':
        size = parseSize(optarg);
        if (size < 0) {
          std::fprintf(stderr, "invalid size specified for 'maxbytes'\n");
          return {false, kBadArgumentsExit};
        }
        options->maxBytes = static_cast<size_t>(size);
        break;
      case 'i':
        size = parseSize(optarg);
        if (size < 0) {
          std::fprintf(stderr, "invalid size specified for 'stepBytes'\n");
          return {false, kBadArgumentsExit};
        }
        options->stepBytes = static_cast<size_t>(size);
        break;
      case 'f': options->stepFactor = static_cast<size_t>(integerArgument(optarg)); break;
      case 'n': options->iters = static_cast<int>(integerArgument(optarg)); break;
      case 'm': options->aggIters = static_cast<int>(integerArgument(optarg)); break;
      case 'w': options->warmupIters = static_cast<int>(integerArgument(optarg)); break;
      case 'N': options->runCycles = static_cast<int>(integerArgument(optarg)); break;
      case 'p': options->parallelInit = static_cast<int>(integerArgument(optarg)); break;
      case 'c': options->check = static_cast<int>(integerArgument(optarg)); break;
      case 'o': options->opIndex = findOp(optarg); break;
      case 'd': options->typeIndex = findType(optarg); break;
      case 'r': options->root = static_cast<int>(integerArgument(optarg)); break;
      case 'z': options->blocking = static_cast<int>(integerArgument(optarg)); break;
      case 'y': ignore('y', "stream_null: host calls take no stream"); break;
      case 'T': options->timeoutSeconds = static_cast<int>(integerArgument(optarg)); break;
      case 'G': ignore('G', "cudagraph"); break;
      case 'C': options->reportCpuTime = static_cast<int>(integerArgument(optarg)); break;
      case 'S': options->reportTimestamps = static_cast<int>(integerArgument(optarg)); break;
      case 'J': options->outputFile = optarg; break;
      case 'a':
        options->aggregation = static_cast<TimeAggregation>(integerArgument(optarg));
        break;
      case 'R': options->localRegister = static_cast<int>(integerArgument(optarg)); break;
      case 'x': ignore('x', "cta_policy"); break;
      case 'D': ignore('D', "device_implementation"); break;
      case 'V': ignore('V', "device_cta_count"); break;
      case 'M': ignore('M', "memory report of GPU memory"); break;
      case 'u': options->unalign = static_cast<int>(integerArgument(optarg)); break;
      case 'I': options->perIterationTiming = static_cast<int>(integerArgument(optarg)); break;
      case 'h':
        printUsage(basename(argv[0]));
        return {false, 0};
      default:
        // getopt has already named the offending option on stderr.
        printUsage(basename(argv[0]));
        return {false, kBadArgumentsExit};
    }
  }
  if (options->minBytes > options->maxBytes) {
    std::fprintf(stderr, "invalid sizes for 'minbytes' and 'maxbytes': %llu > %llu\n",
                 static_cast<unsigned long long>(options->minBytes),
                 static_cast<unsigned long long>(options->maxBytes));
    return {false, kBadArgumentsExit};
  }
  if (options->nGpus != 1) {
    std::fprintf(stderr,
                 "-g %d: on host memory every thread drives exactly one rank (-g 1); use -t to run "
                 "more ranks per process\n",
                 options->nGpus);
    return {false, kBadArgumentsExit};
  }
  if (options->nThreads < 1) {
    std::fprintf(stderr, "-t %d: at least one thread is needed\n", options->nThreads);
    return {false, kBadArgumentsExit};
  }
  int aggregation = static_cast<int>(options->aggregation);
  if (aggregation < 0 || aggregation > 3) {
    std::fprintf(stderr, "-a %d: expected 0 (rank 0), 1 (average), 2 (minimum) or 3 (maximum)\n",
                 aggregation);
    return {false, kBadArgumentsExit};
  }
  if (options->perIterationTiming != 0 && options->perIterationTiming != 1) {
    std::fprintf(stderr, "per-iteration timing (-I) only supports 0=off or 1=on. Disabling.\n");
    options->perIterationTiming = 0;
  }
  if (options->unalign < 0) {
    std::fprintf(stderr, "-u %d: the first element's index cannot be negative\n", options->unalign);
    return {false, kBadArgumentsExit};
  }
  if (options->blocking < 0 || options->blocking > 2) {
    std::fprintf(stderr, "-z %d: expected 0, 1 (complete and barrier) or 2 (complete, no barrier)\n",
                 options->blocking);
    return {false, kBadArgumentsExit};
  }
  if (options->localRegister < 0 || options->localRegister > 2) {
    std::fprintf(stderr, "-R %d: expected 0, 1 (local) or 2 (symmetric)\n", options->localRegister);
    return {false, kBadArgumentsExit};
  }
  return {true, 0};
}

}  // namespace weft::perf
