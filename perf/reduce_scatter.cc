// reduce_scatter_perf: nccl-tests' ReduceScatter benchmark on Weft's public API.

#include "nccl.h"
#include "perf/common/benchmark.h"
#include "perf/common/collective.h"
#include "perf/common/data_check.h"

namespace weft::perf {
namespace {

class ReduceScatter final : public Collective {
 public:
  const char* name() const override { return "ReduceScatter"; }
  bool reduces() const override { return true; }
  bool hasRoot() const override { return false; }

  // count is the whole reduced buffer; each rank ends with a block of it (count/nranks elements
  // rounded down to 16 bytes, as nccl-tests).
  CollectiveCounts counts(size_t count, size_t elementSize, int nranks) const override {
    const size_t block = rankBlockCount(count, elementSize, nranks);
    CollectiveCounts c;
    c.sendCount = block * static_cast<size_t>(nranks);
    c.recvCount = block;
    c.paramCount = block;
    c.recvInPlaceOffset = block;  // in place: each rank's result lands in its own slot
    return c;
  }

  double algBandwidthFactor(int nranks) const override { return nranks; }
  // Each rank sends every block but its own.
  double busBandwidthFactor(int nranks) const override {
    return static_cast<double>(nranks - 1) / nranks;
  }

  ncclResult_t run(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t type,
                   ncclRedOp_t op, int, ncclComm_t comm, cudaStream_t stream) const override {
    return ncclReduceScatter(sendbuff, recvbuff, count, type, op, comm, stream);
  }

  void prepareData(const DataSpec& spec, const CollectiveCounts& counts, int rank, int,
                   void* input, void* expected) const override {
    fillInput(input, counts.sendCount, 0, spec, rank);
    if (expected != nullptr) {
      fillReduced(expected, counts.recvCount, counts.recvCount * static_cast<size_t>(rank), spec);
    }
  }
};

}  // namespace
}  // namespace weft::perf

int main(int argc, char** argv) {
  weft::perf::ReduceScatter reduceScatter;
  return weft::perf::benchmarkMain(argc, argv, reduceScatter);
}
