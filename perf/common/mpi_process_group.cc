// The mpirun launcher; compiled with MPI when CMake finds it (WEFT_PERF_MPI), a stub otherwise.
#include "perf/common/process_group.h"

#if defined(WEFT_PERF_MPI)

#include <mpi.h>

#include <cstdio>

namespace weft::perf {
namespace {

MPI_Op mpiOp(ReduceKind kind) {
  return kind == ReduceKind::kSum ? MPI_SUM : kind == ReduceKind::kMin ? MPI_MIN : MPI_MAX;
}

class MpiProcessGroup final : public ProcessGroup {
 public:
  MpiProcessGroup(int* argc, char*** argv) {
    // Several threads call MPI over a run, never two at once (ThreadTeam serializes them).
    int provided = 0;
    MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &localRank_);
    MPI_Comm_free(&local);
  }

  const char* launcher() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int localRank() const override { return localRank_; }

  bool shareUniqueId(int color, ncclUniqueId* id, int* commRank, int* commSize,
                     std::string* error) override {
    if (colorComm_ == MPI_COMM_NULL) MPI_Comm_split(MPI_COMM_WORLD, color, rank_, &colorComm_);
    MPI_Comm_rank(colorComm_, commRank);
    MPI_Comm_size(colorComm_, commSize);
    int ok = 1;
    if (*commRank == 0) {
      ncclResult_t result = ncclGetUniqueId(id);
      if (result != ncclSuccess) {
        *error = std::string("ncclGetUniqueId failed: ") + ncclGetErrorString(result) + " / " +
                 ncclGetLastError(nullptr);
        ok = 0;
      }
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, colorComm_);
    if (!ok) {
      if (*commRank != 0) *error = "the first process of this color could not make the unique id";
      return false;
    }
    MPI_Bcast(id, sizeof(*id), MPI_BYTE, 0, colorComm_);
    return true;
  }

  std::vector<std::string> gatherToRoot(const std::string& text) override {
    int length = static_cast<int>(text.size());
    std::vector<int> lengths(rank_ == 0 ? size_ : 0);
    MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    std::vector<int> offsets(lengths.size());
    int total = 0;
    for (size_t p = 0; p < lengths.size(); ++p) {
      offsets[p] = total;
      total += lengths[p];
    }
    std::vector<char> all(static_cast<size_t>(total) + 1);
    MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR,
                0, MPI_COMM_WORLD);
    std::vector<std::string> texts;
    for (size_t p = 0; p < lengths.size(); ++p) texts.emplace_back(all.data() + offsets[p], lengths[p]);
    return texts;
  }

  void barrier() override { MPI_Barrier(MPI_COMM_WORLD); }
  void allReduce(double* value, ReduceKind kind) override {
    MPI_Allreduce(MPI_IN_PLACE, value, 1, MPI_DOUBLE, mpiOp(kind), MPI_COMM_WORLD);
  }
  void allReduce(int64_t* value, ReduceKind kind) override {
    MPI_Allreduce(MPI_IN_PLACE, value, 1, MPI_INT64_T, mpiOp(kind), MPI_COMM_WORLD);
  }

  [[noreturn]] void abort(int exitCode) override {
    std::fflush(stdout);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, exitCode);
    ProcessGroup::abort(exitCode);
  }
  void finalize() override {
    if (colorComm_ != MPI_COMM_NULL) MPI_Comm_free(&colorComm_);
    MPI_Finalize();
  }

 private:
  int rank_ = 0;
  int size_ = 1;
  int localRank_ = 0;
  MPI_Comm colorComm_ = MPI_COMM_NULL;  // the processes of this process's color
};

}  // namespace

std::unique_ptr<ProcessGroup> createMpiProcessGroup(int* argc, char*** argv) {
  return std::make_unique<MpiProcessGroup>(argc, argv);
}

}  // namespace weft::perf

#else

namespace weft::perf {

std::unique_ptr<ProcessGroup> createMpiProcessGroup(int*, char***) { return nullptr; }

}  // namespace weft::perf

#endif
