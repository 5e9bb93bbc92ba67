// ncclGroupStart / ncclGroupEnd / ncclGroupSimulateEnd.

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
  return toResult(weft::invalidUsage("ncclGroupSimulateEnd is not implemented in this version of Weft (the tuner's "
                                     "estimate comes later); the group is left open and unchanged"),
                  "ncclGroupSimulateEnd");
}
WEFT_PROFILING_ALIAS(ncclGroupSimulateEnd)
