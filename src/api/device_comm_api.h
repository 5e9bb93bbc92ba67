#pragma once
// The host half of NCCL's device API (nccl_device.h and nccl_device/*.h beside nccl.h): device
// communicators, teams, and the resource requirements of device barriers and all-to-alls, for
// kernels that talk to peers directly. Weft has no device API; these functions exist because
// programs built against NCCL 2.28 (PyTorch among them) import them. Those that set up device
// resources return ncclInvalidUsage and say so; the teams are computed, since no peer's memory is
// load/store accessible through a device API here: the LSA team is this rank alone, and the rail
// team is every rank.
// The structs stay opaque here (their layout belongs to nccl_device.h), but for ncclTeam, which
// is passed by value and whose layout NCCL documents.

#include "nccl.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ncclDevCommRequirements;
struct ncclDevComm;
struct ncclDevResourceRequirements;
struct ncclLsaBarrierHandle;
struct ncclGinBarrierHandle;
struct ncclLLA2AHandle;

/// A team: `nRanks` ranks whose world ranks are `stride` apart; this rank is `rank` in it.
struct ncclTeam {
  int nRanks, rank, stride;
};

/// Always ncclInvalidUsage ("not implemented"); *outDevComm is left as it is.
ncclResult_t ncclDevCommCreate(ncclComm_t comm, const struct ncclDevCommRequirements* reqs,
                               struct ncclDevComm* outDevComm);
/// Always ncclInvalidUsage ("not implemented").
ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const struct ncclDevComm* devComm);

/// Every rank of `comm`: {nranks, rank, 1}; {0, 0, 1} (and a WARN) for an invalid communicator.
struct ncclTeam ncclTeamWorld(ncclComm_t comm);
/// The ranks whose memory this rank can load and store through the device API: itself, {1, 0, 1}.
struct ncclTeam ncclTeamLsa(ncclComm_t comm);
/// One rank of each LSA team: with single-rank LSA teams, every rank, as ncclTeamWorld.
struct ncclTeam ncclTeamRail(ncclComm_t comm);
/// The world rank of `team`'s rank `rank`: this rank's, moved by (rank - team.rank) strides.
int ncclTeamRankToWorld(ncclComm_t comm, struct ncclTeam team, int rank);
/// The LSA rank of `team`'s rank `rank`: its world rank less this rank's (0 for this rank).
int ncclTeamRankToLsa(ncclComm_t comm, struct ncclTeam team, int rank);
/// The LL all-to-all slots for `maxElts` elements of up to `maxEltSize` bytes: one per 8 bytes.
int ncclLLA2ACalcSlots(int maxElts, int maxEltSize);
/// Always ncclInvalidUsage ("not implemented"): device barriers and all-to-alls need ncclDevComm.
ncclResult_t ncclLsaBarrierCreateRequirement(struct ncclTeam team, int nBarriers, struct ncclLsaBarrierHandle* outHandle,
                                             struct ncclDevResourceRequirements* outReq);
ncclResult_t ncclGinBarrierCreateRequirement(ncclComm_t comm, struct ncclTeam team, int nBarriers,
                                             struct ncclGinBarrierHandle* outHandle,
                                             struct ncclDevResourceRequirements* outReq);
ncclResult_t ncclLLA2ACreateRequirement(int nBlocks, int nSlots, struct ncclLLA2AHandle* outHandle,
                                        struct ncclDevResourceRequirements* outReq);

#ifdef __cplusplus
}
#endif
