// broadcast_perf: nccl-tests' Broadcast benchmark on Weft's public API.

#include "nccl.h"
#include "perf/common/benchmark.h"
#include "perf/common/collective.h"
#include "perf/common/data_check.h"

namespace weft::perf {
namespace {

class Broadcast final : public Collective {
 public:
  const char* name() const override { return "Broadcast"; }
  bool reduces() const override { return false; }
  bool hasRoot() const override { return true; }

  CollectiveCounts counts(size_t count, size_t, int) const override { return sameCounts(count); }

  // A pipelined broadcast carries the whole buffer over every link once.
  double busBandwidthFactor(int) const override { return 1.0; }

  ncclResult_t run(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t type,
                   ncclRedOp_t, int root, ncclComm_t comm, cudaStream_t stream) const override {
    return ncclBroadcast(sendbuff, recvbuff, count, type, root, comm, stream);
  }

  void prepareData(const DataSpec& spec, const CollectiveCounts& counts, int rank, int root,
                   void* input, void* expected) const override {
    if (rank == root) fillInput(input, counts.sendCount, 0, spec, root);
    if (expected != nullptr) fillInput(expected, counts.recvCount, 0, spec, root);
  }
};

}  // namespace
}  // namespace weft::perf

int main(int argc, char** argv) {
  weft::perf::Broadcast broadcast;
  return weft::perf::benchmarkMain(argc, argv, broadcast);
}
