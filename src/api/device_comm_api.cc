// The host half of NCCL's device API: device communicators and resource requirements are not
// implemented (Weft has no device API yet); teams are computed (src/api/device_comm_api.h).

#include "src/api/device_comm_api.h"

#include "src/api/api_support.h"
#include "src/base/log.h"

using weft::api::toResult;

namespace {

ncclResult_t notImplemented(const char* function) {
  return toResult(weft::invalidUsage("%s is not implemented in this version of Weft (it has no device API); the "
                                     "communicator is still usable for collectives",
                                     function),
                  function);
}

/// {nranks, rank} of `comm`, or {0, 0} with a WARN naming `function`.
ncclTeam worldOf(ncclComm_t comm, const char* function) {
  ncclTeam team{0, 0, 1};
  if (ncclCommCount(comm, &team.nRanks) != ncclSuccess || ncclCommUserRank(comm, &team.rank) != ncclSuccess) {
    WEFT_WARN("%s: not a valid communicator", function);
    return ncclTeam{0, 0, 1};
  }
  return team;
}

}  // namespace

WEFT_API ncclResult_t ncclDevCommCreate(ncclComm_t, const ncclDevCommRequirements*, ncclDevComm*) {
  return notImplemented("ncclDevCommCreate");
}
WEFT_PROFILING_ALIAS(ncclDevCommCreate)

WEFT_API ncclResult_t ncclDevCommDestroy(ncclComm_t, const ncclDevComm*) { return notImplemented("ncclDevCommDestroy"); }
WEFT_PROFILING_ALIAS(ncclDevCommDestroy)

WEFT_API ncclTeam ncclTeamWorld(ncclComm_t comm) { return worldOf(comm, "ncclTeamWorld"); }
WEFT_PROFILING_ALIAS(ncclTeamWorld)

WEFT_API ncclTeam ncclTeamLsa(ncclComm_t) { return ncclTeam{1, 0, 1}; }
WEFT_PROFILING_ALIAS(ncclTeamLsa)

WEFT_API ncclTeam ncclTeamRail(ncclComm_t comm) { return worldOf(comm, "ncclTeamRail"); }
WEFT_PROFILING_ALIAS(ncclTeamRail)

WEFT_API int ncclTeamRankToWorld(ncclComm_t comm, ncclTeam team, int rank) {
  return worldOf(comm, "ncclTeamRankToWorld").rank + (rank - team.rank) * team.stride;
}
WEFT_PROFILING_ALIAS(ncclTeamRankToWorld)

WEFT_API int ncclTeamRankToLsa(ncclComm_t comm, ncclTeam team, int rank) {
  return ncclTeamRankToWorld(comm, team, rank) - worldOf(comm, "ncclTeamRankToLsa").rank;
}
WEFT_PROFILING_ALIAS(ncclTeamRankToLsa)

WEFT_API int ncclLLA2ACalcSlots(int maxElts, int maxEltSize) { return maxElts * ((maxEltSize + 7) / 8); }
WEFT_PROFILING_ALIAS(ncclLLA2ACalcSlots)

WEFT_API ncclResult_t ncclLsaBarrierCreateRequirement(ncclTeam, int, ncclLsaBarrierHandle*,
                                                      ncclDevResourceRequirements*) {
  return notImplemented("ncclLsaBarrierCreateRequirement");
}
WEFT_PROFILING_ALIAS(ncclLsaBarrierCreateRequirement)

WEFT_API ncclResult_t ncclGinBarrierCreateRequirement(ncclComm_t, ncclTeam, int, ncclGinBarrierHandle*,
                                                      ncclDevResourceRequirements*) {
  return notImplemented("ncclGinBarrierCreateRequirement");
}
WEFT_PROFILING_ALIAS(ncclGinBarrierCreateRequirement)

WEFT_API ncclResult_t ncclLLA2ACreateRequirement(int, int, ncclLLA2AHandle*, ncclDevResourceRequirements*) {
  return notImplemented("ncclLLA2ACreateRequirement");
}
WEFT_PROFILING_ALIAS(ncclLLA2ACreateRequirement)
