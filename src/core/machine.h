#pragma once
// This machine as the topology layer sees it, for the decisions a communicator makes about its GPUs
// (their rings, whether two may talk peer to peer): read from NCCL_TOPO_FILE or WEFT_HWLOC_XML
// (topology::configuredTopologyFile), or detected with hwloc, once per process and file, with the
// paths between its nodes.

#include <optional>
#include <string>

#include "src/base/status.h"
#include "topology/paths.h"
#include "topology/system.h"

namespace weft::core {

struct Machine {
  std::string file;   // NCCL_TOPO_FILE or WEFT_HWLOC_XML when one was read; empty: detected
  Status status;      // how the reading went; system and paths are set only when it succeeded
  topology::System system;
  std::optional<topology::Paths> paths;
};

/// The machine for the current topology::configuredTopologyFile() (read at each call, as every knob), loaded at the
/// first call that names that file and kept for the life of the process: hwloc's detection takes
/// tens of milliseconds, and every communicator asks. Thread-safe; the result is never modified.
const Machine& localMachine();

}  // namespace weft::core
