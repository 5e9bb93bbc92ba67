// mpi_allreduce_perf: MPI_Allreduce (float sum, out of place) through the sweep and table of
// all_reduce_perf, so that Weft is compared with MPI on the same sizes, iterations and busbw.
// Launch it as all_reduce_perf: mpirun -np 2 mpi_allreduce_perf -b 8 -e 256M -f 2

#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "perf/compare/sweep.h"

namespace weft::perf::compare {
namespace {

class MpiAllReduce final : public SweepTarget {
 public:
  explicit MpiAllReduce(size_t maxBytes) : maxBytes_(maxBytes), send_(maxBytes), recv_(maxBytes) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks_);
  }

  int rank() const override { return rank_; }
  int ranks() const override { return ranks_; }
  double busBandwidthFactor() const override { return allReduceBusFactor(ranks_); }
  RowLabels labels() const override { return kFloatSum; }

  bool runOnce(size_t bytes, int iter) override {
    const size_t offset = iterationOffset(bytes, maxBytes_, iter);
    return allReduce(send_.floats(offset), recv_.floats(offset), bytes / sizeof(float));
  }

  int64_t checkOnce(size_t bytes) override {
    const size_t count = bytes / sizeof(float);
    fillCheckInput(send_.floats(), count, rank_);
    if (!allReduce(send_.floats(), recv_.floats(), count)) return static_cast<int64_t>(count);
    return countWrongSums(recv_.floats(), count, ranks_);
  }

  void barrier() override { MPI_Barrier(MPI_COMM_WORLD); }

  double sumOverRanks(double value) override {
    double sum = 0;
    MPI_Allreduce(&value, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return sum;
  }

 private:
  bool allReduce(const float* send, float* recv, size_t count) {
    const int result = MPI_Allreduce(send, recv, static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (result == MPI_SUCCESS) return true;
    std::fprintf(stderr, "rank %d: MPI_Allreduce of %zu floats failed with MPI error %d\n", rank_, count, result);
    return false;
  }

  size_t maxBytes_;
  TouchedBuffer send_;
  TouchedBuffer recv_;
  int rank_ = 0;
  int ranks_ = 1;
};

std::string libraryVersion() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(version, &length);
  std::string text(version, static_cast<size_t>(length));
  const size_t end = text.find_first_of(",\n");
  return end == std::string::npos ? text : text.substr(0, end);
}

}  // namespace
}  // namespace weft::perf::compare

int main(int argc, char** argv) {
  using namespace weft::perf::compare;
  SweepOptions options;
  int exitCode = 0;
  if (!parseSweepOptions(argc, argv, "MPI_Allreduce (float sum) in all_reduce_perf's table", ExtraFlags{},
                         &options, &exitCode)) {
    return exitCode;
  }
  if (options.maxBytes / sizeof(float) > static_cast<size_t>(INT32_MAX)) {
    std::fprintf(stderr, "mpi_allreduce_perf: -e above 8G does not fit MPI's int count\n");
    return 2;
  }
  MPI_Init(&argc, &argv);
  int status = 0;
  {
    MpiAllReduce target(options.maxBytes);
    status = runSweep(options, "# mpi_allreduce_perf: MPI_Allreduce, " + libraryVersion(), target);
  }
  MPI_Finalize();
  return status;
}
