// scatter_perf: nccl-tests' Scatter benchmark on Weft's public API (ncclScatter).

#include "nccl.h"
#include "perf/common/benchmark.h"
#include "perf/common/collective.h"
#include "perf/common/data_check.h"

namespace weft::perf {
namespace {

class Scatter final : public Collective {
 public:
  const char* name() const override { return "Scatter"; }
  bool reduces() const override { return false; }
  bool hasRoot() const override { return true; }

  // count is the root's whole buffer; each rank receives a block of it (count/nranks elements
  // rounded down to 16 bytes, as nccl-tests).
  CollectiveCounts counts(size_t count, size_t elementSize, int nranks) const override {
    const size_t block = rankBlockCount(count, elementSize, nranks);
    CollectiveCounts c;
    c.sendCount = block * static_cast<size_t>(nranks);
    c.recvCount = block;
    c.paramCount = block;
    c.recvInPlaceOffset = block;  // in place: each rank receives into its own slot
    return c;
  }

  double algBandwidthFactor(int nranks) const override { return nranks; }
  // The root sends every block but its own.
  double busBandwidthFactor(int nranks) const override {
    return static_cast<double>(nranks - 1) / nranks;
  }

  ncclResult_t run(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t type,
                   ncclRedOp_t, int root, ncclComm_t comm, cudaStream_t stream) const override {
    return ncclScatter(sendbuff, recvbuff, count, type, root, comm, stream);
  }

  void prepareData(const DataSpec& spec, const CollectiveCounts& counts, int rank, int root,
                   void* input, void* expected) const override {
    if (rank == root) fillInput(input, counts.sendCount, 0, spec, root);
    if (expected != nullptr) {
      fillInput(expected, counts.recvCount, counts.recvCount * static_cast<size_t>(rank), spec, root);
    }
  }
};

}  // namespace
}  // namespace weft::perf

int main(int argc, char** argv) {
  weft::perf::Scatter scatter;
  return weft::perf::benchmarkMain(argc, argv, scatter);
}
