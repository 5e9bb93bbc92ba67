#pragma once
// Where a System comes from: a file the user names, or the machine itself.

#include <string>

#include "src/base/status.h"
#include "topology/system.h"

namespace weft::topology {

/// Reads `file` as NCCL topology XML or hwloc XML (told apart by content); with an empty `file`,
/// detects this machine with hwloc. Errors name the file, the line and the problem.
Status loadSystem(const std::string& file, System* out);

/// The file the environment names to describe this machine: NCCL_TOPO_FILE, else WEFT_HWLOC_XML;
/// empty: detect it. For loadSystem.
std::string configuredTopologyFile();
/// The knob that named configuredTopologyFile(): "NCCL_TOPO_FILE" or "WEFT_HWLOC_XML"; "" when
/// neither is set.
std::string configuredTopologyKnob();

}  // namespace weft::topology
