// ncclGroupStart / ncclGroupEnd / ncclGroupSimulateEnd (the tuner's estimate of the group, in
// microseconds, without running its operations).

#include "src/api/api_support.h"
#include "src/core/group.h"

using weft::api::toResult;
using weft::core::Group;

WEFT_API ncclResult_t ncclGroupStart() {
  Group::current().start();
  return ncclSuccess;
}
WEFT_PROFILING_ALIAS(ncclGroupStart)

WEFT_API ncclResult_t ncclGroupEnd() { return toResult(Group::current().end(), "ncclGroupEnd"); }
WEFT_PROFILING_ALIAS(ncclGroupEnd)

WEFT_API ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  constexpr unsigned int kSimInfoMagic = 0x74685283;  // NCCL_SIM_INFO_INITIALIZER's
  if (simInfo == nullptr || simInfo->magic != kSimInfoMagic || simInfo->size < sizeof(ncclSimInfo_t)) {
    // The group stays open, as NCCL leaves it: a corrected call can still close it.
    return toResult(weft::invalidArgument("simInfo is %s: initialize it with NCCL_SIM_INFO_INITIALIZER",
                                          simInfo == nullptr ? "NULL" : "not initialized"),
                    "ncclGroupSimulateEnd");
  }
  double estimated = 0;
  weft::Status status = Group::current().simulateEnd(&estimated);
  if (status.isOk()) simInfo->estimatedTime = static_cast<float>(estimated);
  return toResult(status, "ncclGroupSimulateEnd");
}
WEFT_PROFILING_ALIAS(ncclGroupSimulateEnd)
