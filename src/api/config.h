#pragma once
// Reading ncclConfig_t, including the smaller layouts of older NCCL versions.

#include "nccl.h"
#include "src/base/status.h"
#include "src/core/communicator.h"

namespace weft::api {

/// Resolves `config` (may be NULL) into options: unset fields come from `inherited` (a split's
/// parent; may be NULL) or the environment (NCCL_COMM_BLOCKING). A config whose size or magic
/// shows it was not set with NCCL_CONFIG_INITIALIZER is kInvalidArgument.
Status readConfig(const ncclConfig_t* config, const core::CommOptions* inherited, core::CommOptions* out);

}  // namespace weft::api
