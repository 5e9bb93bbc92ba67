#include "perf/common/benchmark.h"

#include <errno.h>
#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "perf/common/data_types.h"
#include "perf/common/host_buffer.h"
#include "perf/common/iteration_stats.h"
#include "perf/common/json_output.h"
#include "perf/common/options.h"
#include "perf/common/process_group.h"
#include "perf/common/report.h"
#include "perf/common/run_header.h"
#include "perf/common/split_color.h"
#include "perf/common/thread_team.h"
#include "perf/common/timer.h"
#include "perf/common/watchdog.h"

extern char** environ;

namespace weft::perf {
namespace {

// nccl-tests' testResult_t numbers, which become the exit status.
enum class TestResult : int {
  kSuccess = 0,
  kInternalError = 1,
  kNcclError = 3,
  kTimeout = 4,
  kCheckFailed = 7,  // testNumResults: what nccl-tests returns for wrong data or a bandwidth below NCCL_TESTS_MIN_BW
};

// Prints where an NCCL call failed (nccl-tests' wording) and returns kNcclError.
#define WEFT_PERF_RETURN_IF_NCCL_ERROR(call)                                                      \
  do {                                                                                            \
    ncclResult_t weftPerfResult = (call);                                                         \
    if (weftPerfResult != ncclSuccess) {                                                          \
      std::printf("%s: Test NCCL failure %s:%d '%s / %s'\n", shortHostName().c_str(), __FILE__,  \
                  __LINE__, ncclGetErrorString(weftPerfResult), ncclGetLastError(nullptr));        \
      return TestResult::kNcclError;                                                              \
    }                                                                                             \
  } while (0)

// Passes a failure up, printing each frame it crosses as nccl-tests does.
#define WEFT_PERF_RETURN_IF_FAILED(expression)                                                    \
  do {                                                                                            \
    TestResult weftPerfTest = (expression);                                                       \
    if (weftPerfTest != TestResult::kSuccess) {                                                   \
      std::printf(" .. %s pid %d: Test failure %s:%d\n", shortHostName().c_str(),                 \
                  static_cast<int>(getpid()), __FILE__, __LINE__);                                 \
      return weftPerfTest;                                                                        \
    }                                                                                             \
  } while (0)

// One rank: driven by one thread of this process.
struct RankState {
  int thread = 0;
  int rank = 0;              // in its communicator
  bool worldRank0 = false;   // thread 0 of process 0: the rank whose time -a 0 reports
  ncclComm_t comm = nullptr;
  HostBuffer send;
  HostBuffer recv;
  HostBuffer expected;
  void* sendHandle = nullptr;  // -R 1
  void* recvHandle = nullptr;
  ncclWindow_t sendWindow = nullptr;  // -R 2
  ncclWindow_t recvWindow = nullptr;
  const Report* report = nullptr;  // prints only on the main rank
  // Counts of the size being measured.
  CollectiveCounts counts;
  size_t elementSize = 1;
  std::vector<double> iterationSeconds;  // -I: each timed iteration's time per call
  // Results.
  int64_t errors = 0;
  double busBwSum = 0;
  int busBwCount = 0;
  uint64_t checkSeed = 0;
};

// What every rank thread shares.
struct Run {
  const Options& options;
  const Collective& collective;
  ProcessGroup& group;
  ThreadTeam& team;
  Watchdog& watchdog;
  int nranks;  // of the communicator
  size_t minBytes;
  size_t maxBytes;
  ncclUniqueId id;
};

size_t maxOf(size_t a, size_t b) { return a > b ? a : b; }

// Where a call's buffers start for in-place or out-of-place, iteration iter (iterations walk
// through the buffers to avoid measuring a warm cache), -u elements past the allocations' start.
struct CallBuffers {
  const void* send;
  void* recv;
};

CallBuffers callBuffers(const Run& run, const RankState& s, bool inPlace, int iter) {
  const CollectiveCounts& c = s.counts;
  size_t span = maxOf(c.sendCount, c.recvCount) * s.elementSize;
  size_t steps = span > 0 ? run.maxBytes / span : 1;
  if (steps == 0) steps = 1;
  size_t shift = span * (static_cast<size_t>(iter) % steps) +
                 static_cast<size_t>(run.options.unalign) * s.elementSize;
  char* recv = s.recv.bytes() + shift;
  char* send = s.send.bytes() + shift;
  auto rank = static_cast<size_t>(s.rank);
  if (!inPlace) return {send, recv};
  return {recv + c.sendInPlaceOffset * s.elementSize * rank,
          recv + c.recvInPlaceOffset * s.elementSize * rank};
}

void setupSize(const Run& run, RankState& s, size_t bytes, ncclDataType_t type) {
  s.elementSize = typeInfo(type).size;
  s.counts = run.collective.counts(bytes / s.elementSize, s.elementSize, run.nranks);
}

// Host calls are complete when they return; what is left is to notice an asynchronous failure.
TestResult completeCall(RankState& s) {
  ncclResult_t state = ncclSuccess;
  WEFT_PERF_RETURN_IF_NCCL_ERROR(ncclCommGetAsyncError(s.comm, &state));
  if (state != ncclInProgress) WEFT_PERF_RETURN_IF_NCCL_ERROR(state);
  return TestResult::kSuccess;
}

TestResult startCall(const Run& run, RankState& s, ncclDataType_t type, TestOp op, int root,
                     bool inPlace, int iter) {
  CallBuffers buffers = callBuffers(run, s, inPlace, iter);
  ncclRedOp_t redOp = builtinRedOp(op);
  const bool preMulSum = run.collective.reduces() && op == TestOp::kMulSum;
  if (preMulSum) {
    alignas(8) unsigned char scalar[8];
    writePreMulScalar(type, s.rank, scalar);
    WEFT_PERF_RETURN_IF_NCCL_ERROR(
        ncclRedOpCreatePreMulSum(&redOp, scalar, type, ncclScalarHostImmediate, s.comm));
  }
  run.watchdog.enter(s.thread, s.rank);
  ncclResult_t result = run.collective.run(buffers.send, buffers.recv, s.counts.paramCount, type,
                                           redOp, root, s.comm, nullptr);
  run.watchdog.leave(s.thread);
  WEFT_PERF_RETURN_IF_NCCL_ERROR(result);
  if (preMulSum) WEFT_PERF_RETURN_IF_NCCL_ERROR(ncclRedOpDestroy(redOp, s.comm));
  if (run.options.blocking) WEFT_PERF_RETURN_IF_FAILED(completeCall(s));
  if (run.options.blocking == 1) run.team.barrier();
  return TestResult::kSuccess;
}

void prepareData(const Run& run, RankState& s, ncclDataType_t type, TestOp op, int root,
                 bool inPlace, uint64_t seed) {
  CallBuffers buffers = callBuffers(run, s, false, 0);
  std::memset(buffers.recv, 0, s.counts.recvCount * s.elementSize);
  buffers = callBuffers(run, s, inPlace, 0);
  DataSpec spec{type, op, run.nranks, seed};
  run.collective.prepareData(spec, s.counts, s.rank, root, const_cast<void*>(buffers.send),
                             s.expected.data());
  if (run.collective.keepsReceiveBuffer(s.rank, root)) {
    std::memcpy(s.expected.data(), buffers.recv, s.counts.recvCount * s.elementSize);
  }
}

TestResult measure(const Run& run, RankState& s, ncclDataType_t type, TestOp op, int root,
                   bool inPlace) {
  const Options& o = run.options;
  if (o.check) prepareData(run, s, type, op, root, inPlace, 99);
  WEFT_PERF_RETURN_IF_FAILED(startCall(run, s, type, op, root, inPlace, 0));
  WEFT_PERF_RETURN_IF_FAILED(completeCall(s));
  run.team.barrier();

  Timer timer;
  Timer iterationTimer;
  for (int iter = 0; iter < o.iters; ++iter) {
    if (o.aggIters > 1) WEFT_PERF_RETURN_IF_NCCL_ERROR(ncclGroupStart());
    for (int a = 0; a < o.aggIters; ++a) {
      WEFT_PERF_RETURN_IF_FAILED(startCall(run, s, type, op, root, inPlace, iter * o.aggIters + a));
    }
    if (o.aggIters > 1) WEFT_PERF_RETURN_IF_NCCL_ERROR(ncclGroupEnd());
    if (o.perIterationTiming) {
      s.iterationSeconds[iter] = iterationTimer.seconds() / o.aggIters;
      iterationTimer.reset();
    }
  }
  const double calls = static_cast<double>(o.iters) * o.aggIters;
  const double cpuSeconds = timer.seconds() / calls;
  WEFT_PERF_RETURN_IF_FAILED(completeCall(s));
  double seconds = timer.seconds() / calls;
  seconds = run.team.aggregateTime(seconds, o.aggregation, s.worldRank0);

  const double algBw = static_cast<double>(s.counts.paramCount * s.elementSize) / 1.0e9 / seconds *
                       run.collective.algBandwidthFactor(run.nranks);
  const double busBw = algBw * run.collective.busBandwidthFactor(run.nranks);
  run.team.barrier();

  int64_t wrong = 0;
  ++s.checkSeed;
  const bool checked = o.check != 0 && (!inPlace || run.collective.checksInPlace());
  for (int c = 0; checked && c < o.check; ++c) {
    prepareData(run, s, type, op, root, inPlace, s.checkSeed);
    WEFT_PERF_RETURN_IF_FAILED(startCall(run, s, type, op, root, inPlace, 0));
    WEFT_PERF_RETURN_IF_FAILED(completeCall(s));
    CallBuffers buffers = callBuffers(run, s, inPlace, 0);
    DataSpec spec{type, op, run.nranks, s.checkSeed};
    int64_t mine = countWrong(buffers.recv, s.expected.data(), s.counts.recvCount, spec);
    if (mine != 0) ++s.errors;
    wrong = run.team.sum(mine);
    if (wrong != 0) break;
  }

  Measurement m;
  m.inPlace = inPlace;
  m.microseconds = (o.reportCpuTime ? cpuSeconds : seconds) * 1.0e6;
  m.algBw = algBw;
  m.busBw = busBw;
  m.checked = checked;
  m.wrong = wrong;
  s.report->rowResult(m);
  if (o.perIterationTiming) {
    std::vector<std::vector<double>> rows = run.team.gatherIterationTimes(s.iterationSeconds);
    if (!rows.empty()) s.report->rowIterations(inPlace, maxOverRows(rows), rows);
  }
  s.busBwSum += busBw;
  s.busBwCount += 1;
  return TestResult::kSuccess;
}

size_t nextSize(const Options& o, size_t size) {
  size_t next = o.stepFactor > 1 ? (size == 0 ? 1 : size * o.stepFactor) : size + o.stepBytes;
  return next > size ? next : SIZE_MAX;  // a step that does not grow ends the sweep
}

TestResult sweep(const Run& run, RankState& s, const TypeInfo& type, TestOp op, const char* opLabel,
                 int root) {
  const Options& o = run.options;
  run.team.barrier();
  for (size_t size = run.minBytes; size <= run.maxBytes; size = size == 0 ? 1 : size * 2) {
    setupSize(run, s, size, type.type);
    for (int iter = 0; iter < o.warmupIters; ++iter) {
      WEFT_PERF_RETURN_IF_FAILED(startCall(run, s, type.type, op, root, false, iter));
    }
    WEFT_PERF_RETURN_IF_FAILED(completeCall(s));
  }
  long cycles = o.runCycles;  // 0 never reaches 0 again: run until killed
  do {
    for (size_t size = run.minBytes; size <= run.maxBytes; size = nextSize(o, size)) {
      setupSize(run, s, size, type.type);
      s.report->rowStart(maxOf(s.counts.sendCount, s.counts.recvCount) * s.elementSize,
                         s.counts.paramCount, type.name, opLabel, root);
      WEFT_PERF_RETURN_IF_FAILED(measure(run, s, type.type, op, root, false));
      WEFT_PERF_RETURN_IF_FAILED(measure(run, s, type.type, op, root, true));
      s.report->rowEnd(o.iters);
    }
  } while (--cycles != 0);
  return TestResult::kSuccess;
}

TestResult runSweeps(const Run& run, RankState& s) {
  const Options& o = run.options;
  if (std::string reason = run.collective.skipReason(run.nranks); !reason.empty()) {
    s.report->line("%s\n", reason.c_str());
    return TestResult::kSuccess;
  }
  auto types = allTypes();
  auto ops = allOps();
  // -r -1 runs every root in turn, as nccl-tests does; collectives without a root show -1.
  int firstRoot = -1, lastRoot = -1;
  if (run.collective.hasRoot()) {
    firstRoot = o.root < 0 ? 0 : o.root;
    lastRoot = o.root < 0 ? run.nranks - 1 : o.root;
  }
  for (size_t t = 0; t < types.size(); ++t) {
    if (o.typeIndex != -1 && static_cast<int>(t) != o.typeIndex) continue;
    if (!run.collective.reduces()) {
      for (int root = firstRoot; root <= lastRoot; ++root) {
        WEFT_PERF_RETURN_IF_FAILED(sweep(run, s, types[t], TestOp::kSum, "none", root));
      }
      continue;
    }
    for (size_t k = 0; k < ops.size(); ++k) {
      if (o.opIndex != -1 && static_cast<int>(k) != o.opIndex) continue;
      for (int root = firstRoot; root <= lastRoot; ++root) {
        WEFT_PERF_RETURN_IF_FAILED(sweep(run, s, types[t], ops[k].op, ops[k].name, root));
      }
    }
  }
  return TestResult::kSuccess;
}

TestResult allocateBuffers(const Run& run, RankState& s) {
  CollectiveCounts largest = run.collective.counts(run.maxBytes, 1, run.nranks);
  const bool viaNccl = run.options.localRegister != 0;
  // -u shifts the buffers by up to 8 bytes (the largest type) per element.
  const size_t unalignBytes = 8 * static_cast<size_t>(run.options.unalign);
  WEFT_PERF_RETURN_IF_NCCL_ERROR(
      s.send.allocate(maxOf(largest.sendCount, run.maxBytes) + unalignBytes, viaNccl));
  WEFT_PERF_RETURN_IF_NCCL_ERROR(
      s.recv.allocate(maxOf(largest.recvCount, run.maxBytes) + unalignBytes, viaNccl));
  if (run.options.check) WEFT_PERF_RETURN_IF_NCCL_ERROR(s.expected.allocate(largest.recvCount, false));
  if (run.options.perIterationTiming) s.iterationSeconds.assign(static_cast<size_t>(run.options.iters), 0.0);
  return TestResult::kSuccess;
}

// Registration (-R) of the ranks in ranks, one group so that one thread may drive several ranks
// through the collective window registration.
TestResult registerBuffers(const Run& run, const std::vector<RankState*>& ranks) {
  if (run.options.localRegister == 0) return TestResult::kSuccess;
  WEFT_PERF_RETURN_IF_NCCL_ERROR(ncclGroupStart());
  for (RankState* s : ranks) {
    if (run.options.localRegister == 2) {
      WEFT_PERF_RETURN_IF_NCCL_ERROR(ncclCommWindowRegister(s->comm, s->send.data(), s->send.size(),
                                                            &s->sendWindow, NCCL_WIN_COLL_SYMMETRIC));
      WEFT_PERF_RETURN_IF_NCCL_ERROR(ncclCommWindowRegister(s->comm, s->recv.data(), s->recv.size(),
                                                            &s->recvWindow, NCCL_WIN_COLL_SYMMETRIC));
    } else {
      WEFT_PERF_RETURN_IF_NCCL_ERROR(
          ncclCommRegister(s->comm, s->send.data(), s->send.size(), &s->sendHandle));
      WEFT_PERF_RETURN_IF_NCCL_ERROR(
          ncclCommRegister(s->comm, s->recv.data(), s->recv.size(), &s->recvHandle));
    }
  }
  WEFT_PERF_RETURN_IF_NCCL_ERROR(ncclGroupEnd());
  return TestResult::kSuccess;
}

TestResult deregisterBuffers(const Run& run, const std::vector<RankState*>& ranks) {
  if (run.options.localRegister == 0) return TestResult::kSuccess;
  WEFT_PERF_RETURN_IF_NCCL_ERROR(ncclGroupStart());
  for (RankState* s : ranks) {
    if (s->sendWindow != nullptr) WEFT_PERF_RETURN_IF_NCCL_ERROR(ncclCommWindowDeregister(s->comm, s->sendWindow));
    if (s->recvWindow != nullptr) WEFT_PERF_RETURN_IF_NCCL_ERROR(ncclCommWindowDeregister(s->comm, s->recvWindow));
    if (s->sendHandle != nullptr) WEFT_PERF_RETURN_IF_NCCL_ERROR(ncclCommDeregister(s->comm, s->sendHandle));
    if (s->recvHandle != nullptr) WEFT_PERF_RETURN_IF_NCCL_ERROR(ncclCommDeregister(s->comm, s->recvHandle));
  }
  WEFT_PERF_RETURN_IF_NCCL_ERROR(ncclGroupEnd());
  return TestResult::kSuccess;
}

// Creates the communicators of ranks from this thread: directly for one rank, in one group for
// several (as nccl-tests does with -g).
TestResult initComms(const Run& run, const std::vector<RankState*>& ranks) {
  if (ranks.size() == 1) {
    WEFT_PERF_RETURN_IF_NCCL_ERROR(ncclCommInitRank(&ranks[0]->comm, run.nranks, run.id, ranks[0]->rank));
  } else {
    WEFT_PERF_RETURN_IF_NCCL_ERROR(ncclGroupStart());
    for (RankState* s : ranks) WEFT_PERF_RETURN_IF_NCCL_ERROR(ncclCommInitRank(&s->comm, run.nranks, run.id, s->rank));
    WEFT_PERF_RETURN_IF_NCCL_ERROR(ncclGroupEnd());
  }
  return registerBuffers(run, ranks);
}

// Prints every process's "#  Rank ..." lines (on process 0) and returns them there.
std::string printDeviceLines(const Options& o, ProcessGroup& group, int color, const Report& report) {
  std::string lines;
  for (const std::string& text : group.gatherToRoot(deviceLines(o, group, color))) lines += text;
  report.line("%s", lines.c_str());
  return lines;
}

// Largest maxBytes whose buffers (send, receive and, when checking, expected) of every rank of this
// process fit in physical memory, keeping 1 GiB for everything else.
size_t memoryLimitedMaxBytes(const Options& o) {
  const auto pages = static_cast<size_t>(sysconf(_SC_PHYS_PAGES));
  const auto pageSize = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t physical = pages * pageSize;
  const size_t reserve = size_t{1} << 30;
  if (physical <= reserve) return physical / 4;
  return (physical - reserve) / static_cast<size_t>(o.nThreads) / (o.check ? 3 : 2);
}

// This process's NCCL_TESTS_SPLIT_MASK / NCCL_TESTS_SPLIT color. As nccl-tests (which reads them
// only when built with MPI), only mpirun's processes split; elsewhere a note says they are ignored.
bool processColor(const ProcessGroup& group, Options* options, int* color, std::string* error) {
  const char* mask = std::getenv("NCCL_TESTS_SPLIT_MASK");
  const char* split = std::getenv("NCCL_TESTS_SPLIT");
  *color = 0;
  if (std::strcmp(group.launcher(), "mpi") == 0) return splitColor(group.rank(), mask, split, color, error);
  if ((mask != nullptr && *mask != '\0') || (split != nullptr && *split != '\0')) {
    options->notes.push_back("# NCCL_TESTS_SPLIT_MASK and NCCL_TESTS_SPLIT split mpirun's processes "
                             "only: ignored");
  }
  return true;
}

// -J: the JSON file, written by process 0 when the name ends in .json (nccl-tests' only format).
std::unique_ptr<JsonOutput> openJsonOutput(Options* options, const ProcessGroup& group, int argc,
                                           char** argv, int libraryVersion) {
  const std::string& path = options->outputFile;
  if (path.empty() || group.rank() != 0) return nullptr;
  const size_t dot = path.rfind('.');
  const size_t slash = path.rfind('/');
  const bool json = dot != std::string::npos && (slash == std::string::npos || dot > slash) &&
                    strcasecmp(path.c_str() + dot + 1, "json") == 0;
  if (!json) {
    options->notes.push_back("# -J " + path + ": only JSON output (a name ending in .json) is "
                             "supported; nothing is written");
    return nullptr;
  }
  std::unique_ptr<JsonOutput> output = JsonOutput::create(path);
  if (output != nullptr) output->begin(argc, argv, environ, libraryVersion);
  return output;
}

}  // namespace

int benchmarkMain(int argc, char** argv, const Collective& collective) {
  setlinebuf(stdout);
  int libraryVersion = 0;
  (void)ncclGetVersion(&libraryVersion);

  Options options;
  ParseOutcome parsed = parseOptions(argc, argv, &options);
  if (!parsed.run) return parsed.exitCode;

  std::string error;
  std::unique_ptr<ProcessGroup> group = createProcessGroup(&argc, &argv, options, &error);
  int color = 0;
  if (group == nullptr || !processColor(*group, &options, &color, &error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 255;
  }
  std::unique_ptr<JsonOutput> json = openJsonOutput(&options, *group, argc, argv, libraryVersion);
  const int nThreads = options.nThreads;
  const TableLayout layout{options.reportCpuTime != 0, options.reportTimestamps != 0,
                           options.perIterationTiming != 0};
  const Report mainReport(group->rank() == 0, layout, json.get());
  const Report silentReport(false, layout);

  printRunHeader(mainReport, options, libraryVersion);
  if (!group->needsComm()) {
    std::string devices = printDeviceLines(options, *group, color, mainReport);
    if (json != nullptr) json->config(options, devices);
  }

  size_t minBytes = options.minBytes;
  size_t maxBytes = options.maxBytes;
  auto memoryMax = static_cast<int64_t>(memoryLimitedMaxBytes(options));
  if (!group->needsComm()) group->allReduce(&memoryMax, ReduceKind::kMin);
  if (maxBytes > static_cast<size_t>(memoryMax)) {
    maxBytes = static_cast<size_t>(memoryMax);
    minBytes = std::min(minBytes, maxBytes);
    mainReport.line("#\n# Reducing maxBytes to %ld due to memory limitation\n", static_cast<long>(maxBytes));
  }

  // A failure anywhere ends the whole run; the JSON file keeps what was measured.
  auto failed = [&](TestResult result) {
    if (json != nullptr) {
      json->errors(ncclGetLastError(nullptr));
      json->finish();
    }
    group->abort(static_cast<int>(result));
  };

  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  int commRank = 0;
  int commSize = 1;
  if (!group->shareUniqueId(color, &id, &commRank, &commSize, &error)) {
    std::printf("%s: %s\n", shortHostName().c_str(), error.c_str());
    failed(TestResult::kNcclError);
  }

  // Barriers and timings span every process (all colors), as nccl-tests' do.
  ThreadTeam team(nThreads, group.get(), group->size() * nThreads);
  Watchdog watchdog(options.timeoutSeconds, nThreads, group.get());
  Run run{options, collective, *group, team, watchdog, commSize * nThreads, minBytes, maxBytes, id};

  std::vector<std::unique_ptr<RankState>> states;
  std::vector<RankState*> ranks;
  for (int t = 0; t < nThreads; ++t) {
    states.push_back(std::make_unique<RankState>());
    RankState& s = *states.back();
    s.thread = t;
    s.rank = commRank * nThreads + t;
    s.worldRank0 = group->rank() == 0 && t == 0;
    s.report = (t == 0) ? &mainReport : &silentReport;
    ranks.push_back(&s);
  }
  for (RankState* s : ranks) {
    if (TestResult r = allocateBuffers(run, *s); r != TestResult::kSuccess) failed(r);
  }

  const bool initInThreads = options.parallelInit && nThreads > 1;
  if (!initInThreads) {
    if (TestResult r = initComms(run, ranks); r != TestResult::kSuccess) failed(r);
  }
  if (group->needsComm()) {
    group->attachComm(ranks[0]->comm);
    std::string devices = printDeviceLines(options, *group, color, mainReport);
    if (json != nullptr) json->config(options, devices);
  }
  mainReport.tableHeading();

  auto rankMain = [&](RankState& s) {
    TestResult result = TestResult::kSuccess;
    if (initInThreads) result = initComms(run, {&s});
    if (result == TestResult::kSuccess) result = runSweeps(run, s);
    // One failing rank would leave the others waiting for it: end the whole run.
    if (result != TestResult::kSuccess) failed(result);
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < nThreads; ++t) threads.emplace_back(rankMain, std::ref(*ranks[t]));
  rankMain(*ranks[0]);
  for (std::thread& thread : threads) thread.join();

  int64_t errors = 0;
  double busBwSum = 0;
  int busBwCount = 0;
  for (RankState* s : ranks) {
    errors += s->errors;
    busBwSum += s->busBwSum;
    busBwCount += s->busBwCount;
  }
  group->allReduce(&errors, ReduceKind::kSum);

  if (TestResult r = deregisterBuffers(run, ranks); r != TestResult::kSuccess) failed(r);
  for (RankState* s : ranks) {
    if (ncclResult_t r = ncclCommDestroy(s->comm); r != ncclSuccess) {
      std::printf("%s: Test NCCL failure in ncclCommDestroy: '%s / %s'\n", shortHostName().c_str(),
                  ncclGetErrorString(r), ncclGetLastError(nullptr));
      failed(TestResult::kNcclError);
    }
    s->comm = nullptr;
  }
  states.clear();

  const char* minBwText = std::getenv("NCCL_TESTS_MIN_BW");
  const double minBw = minBwText != nullptr ? std::atof(minBwText) : -1;
  const double busBw = busBwSum / busBwCount;
  const bool bwFailed = minBw >= 0 && busBw < minBw * 0.9;
  mainReport.summary(errors, busBw, minBw, program_invocation_short_name);
  mainReport.line("#\n");
  group->finalize();
  const char* lastError = ncclGetLastError(nullptr);
  if (lastError != nullptr && lastError[0] != '\0') {
    mainReport.line("# error: %s\n", lastError);
  } else {
    mainReport.line("\n");
  }
  if (json != nullptr) {
    json->errors(lastError);
    json->finish();
  }

  if (errors != 0 || bwFailed) {
    std::printf(" .. %s pid %d: Test failure %s:%d\n", shortHostName().c_str(),
                static_cast<int>(getpid()), __FILE__, __LINE__);
    return static_cast<int>(TestResult::kCheckFailed);
  }
  return 0;
}

}  // namespace weft::perf
