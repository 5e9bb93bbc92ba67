// ncclDevCommCreate / ncclDevCommDestroy: present so that programs built against NCCL 2.28 load;
// Weft has no device API yet.

#include "src/api/device_comm_api.h"

#include "src/api/api_support.h"

using weft::api::toResult;

WEFT_API ncclResult_t ncclDevCommCreate(ncclComm_t comm, const ncclDevCommRequirements* reqs,
                                        ncclDevComm* outDevComm) {
  return toResult(weft::invalidUsage("ncclDevCommCreate is not implemented in this version of Weft (it has no "
                                     "device API); the communicator is still usable for collectives"),
                  "ncclDevCommCreate");
}

WEFT_API ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const ncclDevComm* devComm) {
  return toResult(weft::invalidUsage("ncclDevCommDestroy is not implemented in this version of Weft (it has no "
                                     "device API)"),
                  "ncclDevCommDestroy");
}
