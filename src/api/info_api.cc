// Version, error strings, the last error, and log reset.

#include "src/api/api_support.h"
#include "src/base/log.h"
#include "src/base/version.h"

WEFT_API ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr) return weft::api::toResult(weft::invalidArgument("version is NULL"), "ncclGetVersion");
  *version = weft::kNcclVersionCode;
  return ncclSuccess;
}
WEFT_PROFILING_ALIAS(ncclGetVersion)

WEFT_API const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the Weft developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}
WEFT_PROFILING_ALIAS(ncclGetErrorString)

WEFT_API const char* ncclGetLastError(ncclComm_t comm) { return weft::api::lastErrorMessage(); }
WEFT_PROFILING_ALIAS(ncclGetLastError)

// Deprecated in NCCL's header, and still part of its ABI.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
WEFT_API void ncclResetDebugInit() { weft::log::reset(); }
WEFT_PROFILING_ALIAS(ncclResetDebugInit)
#pragma GCC diagnostic pop
