#pragma once
// NCCL_TOPO_DUMP_FILE: the machine as one rank sees it, written at init as NCCL topology XML.

#include "src/base/status.h"

namespace weft::core {

/// When NCCL_TOPO_DUMP_FILE is set and `rank` is NCCL_TOPO_DUMP_FILE_RANK (default 0): loads the
/// system (NCCL_TOPO_FILE, WEFT_HWLOC_XML, or detected with hwloc) and writes it to that file, which
/// NCCL_TOPO_FILE can read back. Otherwise does nothing. An error names the file.
Status dumpTopologyIfAsked(int rank);

}  // namespace weft::core
