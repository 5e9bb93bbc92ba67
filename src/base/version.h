#pragma once
// Weft's version: the NCCL API level it implements and its own release.

namespace weft {

/// The NCCL_VERSION_CODE that ncclGetVersion reports (NCCL 2.28 API).
inline constexpr int kNcclVersionCode = 22809;

/// "Weft <release> (NCCL API 2.28.9)", printed at NCCL_DEBUG=VERSION and by the perf tools.
const char* versionBanner();

}  // namespace weft
