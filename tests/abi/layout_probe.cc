// Prints the ABI-relevant facts of whichever nccl.h is on the include path: struct sizes and field
// offsets, enum values, macro values and the initializers' contents. compare_headers.sh builds it
// against NVIDIA's header and against ours and diffs the two outputs.
#include <cstddef>
#include <cstdio>
#include <cstring>

#include "nccl.h"

#define PRINT_INT(expr) std::printf("%-44s %lld\n", #expr, static_cast<long long>(expr))
#define PRINT_OFFSET(type, field) \
  std::printf("%-44s %zu\n", "offsetof(" #type "," #field ")", offsetof(type, field))

int main() {
  PRINT_INT(NCCL_MAJOR);
  PRINT_INT(NCCL_MINOR);
  PRINT_INT(NCCL_PATCH);
  std::printf("%-44s \"%s\"\n", "NCCL_SUFFIX", NCCL_SUFFIX);
  PRINT_INT(NCCL_VERSION_CODE);
  PRINT_INT(NCCL_VERSION(2, 8, 4));
  PRINT_INT(NCCL_VERSION(2, 28, 9));
  PRINT_INT(NCCL_VERSION(3, 0, 1));
  PRINT_INT(NCCL_UNIQUE_ID_BYTES);
  PRINT_INT(NCCL_CONFIG_UNDEF_INT);
  PRINT_INT(NCCL_CONFIG_UNDEF_PTR == NULL);
  PRINT_INT(NCCL_COMM_NULL == NULL);
  PRINT_INT(NCCL_SPLIT_NOCOLOR);
  std::printf("%-44s %a\n", "NCCL_UNDEF_FLOAT", static_cast<double>(NCCL_UNDEF_FLOAT));
  PRINT_INT(sizeof(NCCL_UNDEF_FLOAT));
  PRINT_INT(NCCL_WIN_DEFAULT);
  PRINT_INT(NCCL_WIN_COLL_SYMMETRIC);
  PRINT_INT(NCCL_WIN_REQUIRED_ALIGNMENT);
  PRINT_INT(NCCL_CTA_POLICY_DEFAULT);
  PRINT_INT(NCCL_CTA_POLICY_EFFICIENCY);
  PRINT_INT(NCCL_CTA_POLICY_ZERO);
  PRINT_INT(NCCL_SHRINK_DEFAULT);
  PRINT_INT(NCCL_SHRINK_ABORT);
  PRINT_INT(NCCL_REVOKE_DEFAULT);

  PRINT_INT(sizeof(ncclUniqueId));
  PRINT_INT(sizeof(reinterpret_cast<ncclUniqueId*>(0)->internal));
  PRINT_INT(alignof(ncclUniqueId));
  PRINT_INT(sizeof(ncclComm_t));
  PRINT_INT(sizeof(ncclWindow_t));
  PRINT_INT(sizeof(cudaStream_t));

  PRINT_INT(ncclSuccess);
  PRINT_INT(ncclUnhandledCudaError);
  PRINT_INT(ncclSystemError);
  PRINT_INT(ncclInternalError);
  PRINT_INT(ncclInvalidArgument);
  PRINT_INT(ncclInvalidUsage);
  PRINT_INT(ncclRemoteError);
  PRINT_INT(ncclInProgress);
  PRINT_INT(ncclNumResults);
  PRINT_INT(sizeof(ncclResult_t));

  PRINT_INT(ncclNumOps_dummy);
  PRINT_INT(sizeof(ncclRedOp_dummy_t));
  PRINT_INT(ncclSum);
  PRINT_INT(ncclProd);
  PRINT_INT(ncclMax);
  PRINT_INT(ncclMin);
  PRINT_INT(ncclAvg);
  PRINT_INT(ncclNumOps);
  PRINT_INT(ncclMaxRedOp);
  PRINT_INT(sizeof(ncclRedOp_t));

  PRINT_INT(ncclInt8);
  PRINT_INT(ncclChar);
  PRINT_INT(ncclUint8);
  PRINT_INT(ncclInt32);
  PRINT_INT(ncclInt);
  PRINT_INT(ncclUint32);
  PRINT_INT(ncclInt64);
  PRINT_INT(ncclUint64);
  PRINT_INT(ncclFloat16);
  PRINT_INT(ncclHalf);
  PRINT_INT(ncclFloat32);
  PRINT_INT(ncclFloat);
  PRINT_INT(ncclFloat64);
  PRINT_INT(ncclDouble);
  PRINT_INT(ncclBfloat16);
  PRINT_INT(ncclFloat8e4m3);
  PRINT_INT(ncclFloat8e5m2);
  PRINT_INT(ncclNumTypes);
  PRINT_INT(sizeof(ncclDataType_t));

  PRINT_INT(ncclScalarDevice);
  PRINT_INT(ncclScalarHostImmediate);
  PRINT_INT(sizeof(ncclScalarResidence_t));

  PRINT_INT(sizeof(ncclConfig_t));
  PRINT_INT(alignof(ncclConfig_t));
  PRINT_INT(sizeof(struct ncclConfig_v22800));
  PRINT_OFFSET(ncclConfig_t, size);
  PRINT_OFFSET(ncclConfig_t, magic);
  PRINT_OFFSET(ncclConfig_t, version);
  PRINT_OFFSET(ncclConfig_t, blocking);
  PRINT_OFFSET(ncclConfig_t, cgaClusterSize);
  PRINT_OFFSET(ncclConfig_t, minCTAs);
  PRINT_OFFSET(ncclConfig_t, maxCTAs);
  PRINT_OFFSET(ncclConfig_t, netName);
  PRINT_OFFSET(ncclConfig_t, splitShare);
  PRINT_OFFSET(ncclConfig_t, trafficClass);
  PRINT_OFFSET(ncclConfig_t, commName);
  PRINT_OFFSET(ncclConfig_t, collnetEnable);
  PRINT_OFFSET(ncclConfig_t, CTAPolicy);
  PRINT_OFFSET(ncclConfig_t, shrinkShare);
  PRINT_OFFSET(ncclConfig_t, nvlsCTAs);
  PRINT_OFFSET(ncclConfig_t, nChannelsPerNetPeer);
  PRINT_OFFSET(ncclConfig_t, nvlinkCentricSched);

  // The initializer's bytes, field by field (padding excluded).
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  PRINT_INT(config.size);
  PRINT_INT(config.magic);
  PRINT_INT(config.version);
  PRINT_INT(config.blocking);
  PRINT_INT(config.cgaClusterSize);
  PRINT_INT(config.minCTAs);
  PRINT_INT(config.maxCTAs);
  PRINT_INT(config.netName == NULL);
  PRINT_INT(config.splitShare);
  PRINT_INT(config.trafficClass);
  PRINT_INT(config.commName == NULL);
  PRINT_INT(config.collnetEnable);
  PRINT_INT(config.CTAPolicy);
  PRINT_INT(config.shrinkShare);
  PRINT_INT(config.nvlsCTAs);
  PRINT_INT(config.nChannelsPerNetPeer);
  PRINT_INT(config.nvlinkCentricSched);

  PRINT_INT(sizeof(ncclSimInfo_t));
  PRINT_INT(sizeof(struct ncclSimInfo_v22200));
  PRINT_OFFSET(ncclSimInfo_t, size);
  PRINT_OFFSET(ncclSimInfo_t, magic);
  PRINT_OFFSET(ncclSimInfo_t, version);
  PRINT_OFFSET(ncclSimInfo_t, estimatedTime);
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  PRINT_INT(sim.size);
  PRINT_INT(sim.magic);
  PRINT_INT(sim.version);
  std::printf("%-44s %a\n", "sim.estimatedTime", static_cast<double>(sim.estimatedTime));
  return 0;
}
