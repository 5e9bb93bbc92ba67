// all_gather_perf: nccl-tests' AllGather benchmark on Weft's public API.

#include "nccl.h"
#include "perf/common/benchmark.h"
#include "perf/common/collective.h"
#include "perf/common/data_check.h"
#include "perf/common/data_types.h"

namespace weft::perf {
namespace {

class AllGather final : public Collective {
 public:
  const char* name() const override { return "AllGather"; }
  bool reduces() const override { return false; }
  bool hasRoot() const override { return false; }

  // count is the whole gathered buffer; each rank contributes a block of it (count/nranks
  // elements rounded down to 16 bytes, as nccl-tests).
  CollectiveCounts counts(size_t count, size_t elementSize, int nranks) const override {
    const size_t block = rankBlockCount(count, elementSize, nranks);
    CollectiveCounts c;
    c.sendCount = block;
    c.recvCount = block * static_cast<size_t>(nranks);
    c.paramCount = block;
    c.sendInPlaceOffset = block;  // in place: each rank's block already sits at its slot
    return c;
  }

  double algBandwidthFactor(int nranks) const override { return nranks; }
  // Each rank receives every block but its own.
  double busBandwidthFactor(int nranks) const override {
    return static_cast<double>(nranks - 1) / nranks;
  }

  ncclResult_t run(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t type,
                   ncclRedOp_t, int, ncclComm_t comm, cudaStream_t stream) const override {
    return ncclAllGather(sendbuff, recvbuff, count, type, comm, stream);
  }

  void prepareData(const DataSpec& spec, const CollectiveCounts& counts, int rank, int,
                   void* input, void* expected) const override {
    const size_t block = counts.sendCount;
    fillInput(input, block, block * static_cast<size_t>(rank), spec, rank);
    if (expected == nullptr) return;
    fillGathered(expected, block, spec);
  }
};

}  // namespace
}  // namespace weft::perf

int main(int argc, char** argv) {
  weft::perf::AllGather allGather;
  return weft::perf::benchmarkMain(argc, argv, allGather);
}
