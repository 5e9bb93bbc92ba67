#include "src/core/topology_dump.h"

#include <cerrno>
#include <fstream>

#include "src/base/knobs.h"
#include "src/base/log.h"
#include "topology/load.h"
#include "topology/nccl_xml.h"

namespace weft::core {

Status dumpTopologyIfAsked(int rank) {
  const std::string path = knobs::getString(knobs::KnobId::kTopoDumpFile);
  if (path.empty() || rank != knobs::getInt(knobs::KnobId::kTopoDumpFileRank)) return Status::ok();
  topology::System system;
  WEFT_RETURN_IF_ERROR(topology::loadSystem(topology::configuredTopologyFile(), &system)
                           .withContext("NCCL_TOPO_DUMP_FILE: reading the machine"));
  std::ofstream file(path, std::ios::trunc);
  if (!file) {
    return errnoStatus(errno, "NCCL_TOPO_DUMP_FILE: cannot open %s for writing; set it to a writable path or unset it",
                       path.c_str());
  }
  file << topology::writeNcclTopology(system);
  file.close();
  if (!file) {
    return systemError("NCCL_TOPO_DUMP_FILE: writing %s failed (disk full?); set it to a writable path or unset it",
                       path.c_str());
  }
  WEFT_INFO(log::kGraph, "topology written to %s (NCCL_TOPO_DUMP_FILE)", path.c_str());
  return Status::ok();
}

}  // namespace weft::core
