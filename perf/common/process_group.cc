#include "perf/common/process_group.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace weft::perf {
namespace {

const char* environmentValue(const char* name) {
  const char* value = std::getenv(name);
  return (value != nullptr && value[0] != '\0') ? value : nullptr;
}

bool parseNonNegative(const char* text, int* out) {
  char* end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < 0 || value > 1 << 24) return false;
  *out = static_cast<int>(value);
  return true;
}

class SingleProcessGroup final : public ProcessGroup {
 public:
  const char* launcher() const override { return "single process"; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int localRank() const override { return 0; }
  bool shareUniqueId(int, ncclUniqueId* id, int* commRank, int* commSize, std::string* error) override {
    *commRank = 0;
    *commSize = 1;
    ncclResult_t result = ncclGetUniqueId(id);
    if (result == ncclSuccess) return true;
    *error = std::string("ncclGetUniqueId failed: ") + ncclGetErrorString(result) + " / " +
             ncclGetLastError(nullptr);
    return false;
  }
  std::vector<std::string> gatherToRoot(const std::string& text) override { return {text}; }
  void barrier() override {}
  void allReduce(double*, ReduceKind) override {}
  void allReduce(int64_t*, ReduceKind) override {}
};

// Processes started by a launcher that only sets environment variables. Process-level exchanges
// run over the benchmark's own communicator (one rank per process), so they need only nccl.h.
class EnvironmentProcessGroup final : public ProcessGroup {
 public:
  EnvironmentProcessGroup(int rank, int size, int localRank)
      : rank_(rank), size_(size), localRank_(localRank) {}

  const char* launcher() const override { return "environment"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int localRank() const override { return localRank_; }

  bool shareUniqueId(int, ncclUniqueId* id, int* commRank, int* commSize, std::string* error) override {
    *commRank = rank_;
    *commSize = size_;
    // With NCCL_COMM_ID every process derives the same id from the address it names.
    ncclResult_t result = ncclGetUniqueId(id);
    if (result == ncclSuccess) return true;
    *error = std::string("ncclGetUniqueId failed: ") + ncclGetErrorString(result) + " / " +
             ncclGetLastError(nullptr) + " (is NCCL_COMM_ID=<host>:<port> of process 0 set?)";
    return false;
  }

  bool needsComm() const override { return true; }
  void attachComm(ncclComm_t comm) override { comm_ = comm; }

  // Slots as long as the longest text, each starting with its text's length.
  std::vector<std::string> gatherToRoot(const std::string& text) override {
    auto longest = static_cast<int64_t>(text.size());
    allReduce(&longest, ReduceKind::kMax);
    const size_t slot = sizeof(uint64_t) + static_cast<size_t>(longest);
    std::vector<char> mine(slot, '\0');
    const uint64_t length = text.size();
    std::memcpy(mine.data(), &length, sizeof(length));
    std::memcpy(mine.data() + sizeof(length), text.data(), text.size());
    std::vector<char> all(slot * static_cast<size_t>(size_), '\0');
    check(ncclAllGather(mine.data(), all.data(), slot, ncclChar, comm_, nullptr), "ncclAllGather");
    std::vector<std::string> texts;
    if (rank_ != 0) return texts;
    for (int p = 0; p < size_; ++p) {
      const char* start = all.data() + slot * static_cast<size_t>(p);
      uint64_t size = 0;
      std::memcpy(&size, start, sizeof(size));
      texts.emplace_back(start + sizeof(size), size);
    }
    return texts;
  }

  void barrier() override {
    int64_t token = 0;
    allReduce(&token, ReduceKind::kSum);
  }
  void allReduce(double* value, ReduceKind kind) override {
    check(ncclAllReduce(value, value, 1, ncclFloat64, redOp(kind), comm_, nullptr), "ncclAllReduce");
  }
  void allReduce(int64_t* value, ReduceKind kind) override {
    check(ncclAllReduce(value, value, 1, ncclInt64, redOp(kind), comm_, nullptr), "ncclAllReduce");
  }

 private:
  static ncclRedOp_t redOp(ReduceKind kind) {
    return kind == ReduceKind::kSum ? ncclSum : kind == ReduceKind::kMin ? ncclMin : ncclMax;
  }
  void check(ncclResult_t result, const char* call) {
    if (result == ncclSuccess) return;
    std::printf("%s: Test NCCL failure in %s between processes: '%s / %s'\n", shortHostName().c_str(),
                call, ncclGetErrorString(result), ncclGetLastError(nullptr));
    abort(3);
  }

  int rank_;
  int size_;
  int localRank_;
  ncclComm_t comm_ = nullptr;
};

// The world the launcher's variables describe, if any: {rank, size, local rank}.
bool environmentWorld(int* rank, int* size, int* localRank, std::string* error) {
  struct Source {
    const char* rank;
    const char* size;
    const char* localRank;
  };
  static const Source kSources[] = {
      {"RANK", "WORLD_SIZE", "LOCAL_RANK"},
      {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
      // mpirun of a build without MPI support.
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
  };
  for (const Source& source : kSources) {
    const char* rankText = environmentValue(source.rank);
    const char* sizeText = environmentValue(source.size);
    if (rankText == nullptr || sizeText == nullptr) continue;
    if (!parseNonNegative(rankText, rank) || !parseNonNegative(sizeText, size) || *size < 1 ||
        *rank >= *size) {
      *error = std::string(source.rank) + "=" + rankText + " and " + source.size + "=" + sizeText +
               " do not describe a rank of a world";
      return false;
    }
    *localRank = 0;
    const char* localText = environmentValue(source.localRank);
    if (localText != nullptr && !parseNonNegative(localText, localRank)) {
      *error = std::string(source.localRank) + "=" + localText + " is not a rank";
      return false;
    }
    return true;
  }
  *size = 0;
  return true;
}

}  // namespace

void ProcessGroup::abort(int exitCode) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(exitCode);
}

std::string shortHostName() {
  char name[1024] = {0};
  gethostname(name, sizeof(name) - 1);
  char* dot = std::strchr(name, '.');
  if (dot != nullptr) *dot = '\0';
  return name;
}

std::unique_ptr<ProcessGroup> createProcessGroup(int* argc, char*** argv, const Options& options,
                                                 std::string* error) {
  bool underMpirun = environmentValue("OMPI_COMM_WORLD_SIZE") != nullptr ||
                     environmentValue("PMIX_RANK") != nullptr;
  if (underMpirun) {
    std::unique_ptr<ProcessGroup> group = createMpiProcessGroup(argc, argv);
    if (group != nullptr) return group;
  }
  int rank = 0;
  int size = 0;
  int localRank = 0;
  if (!environmentWorld(&rank, &size, &localRank, error)) return nullptr;
  if (size <= 1) return std::make_unique<SingleProcessGroup>();
  if (options.nThreads != 1) {
    *error = "launched as rank " + std::to_string(rank) + " of " + std::to_string(size) +
             " without MPI: each process runs one rank, so -t must be 1 (use mpirun for -t > 1)";
    return nullptr;
  }
  if (environmentValue("NCCL_COMM_ID") == nullptr) {
    *error = "launched as rank " + std::to_string(rank) + " of " + std::to_string(size) +
             " without MPI: set NCCL_COMM_ID=<host of rank 0>:<free port> in every process";
    return nullptr;
  }
  return std::make_unique<EnvironmentProcessGroup>(rank, size, localRank);
}

}  // namespace weft::perf
