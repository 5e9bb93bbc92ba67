#pragma once
// The host half of NCCL's device API (nccl_device.h): device communicators that kernels use to
// talk to peers directly. Weft does not have the device API; these two functions exist because
// programs built against NCCL 2.28 (PyTorch among them) import them, and they say so when called.
// The structs stay opaque here: their layout belongs to nccl_device.h.

#include "nccl.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ncclDevCommRequirements;
struct ncclDevComm;

/// Always ncclInvalidUsage ("not implemented"); *outDevComm is left as it is.
ncclResult_t ncclDevCommCreate(ncclComm_t comm, const struct ncclDevCommRequirements* reqs,
                               struct ncclDevComm* outDevComm);
/// Always ncclInvalidUsage ("not implemented").
ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const struct ncclDevComm* devComm);

#ifdef __cplusplus
}
#endif
