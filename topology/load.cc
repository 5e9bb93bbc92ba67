#include "topology/load.h"

#include <fstream>

#include "src/base/knobs.h"
#include "topology/hwloc_detector.h"
#include "topology/nccl_xml.h"

namespace weft::topology {

Status loadSystem(const std::string& file, System* out) {
  if (file.empty()) return detectSystem(out);
  std::ifstream stream(file);
  std::string head(512, '\0');
  stream.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(stream.gcount()));
  if (looksLikeHwlocXml(head)) return readHwlocXmlFile(file, out);
  return readNcclTopologyFile(file, out);
}

std::string configuredTopologyFile() {
  const std::string file = knobs::getString(knobs::KnobId::kTopoFile);
  return file.empty() ? knobs::getString(knobs::KnobId::kHwlocXml) : file;
}

std::string configuredTopologyKnob() {
  if (!knobs::getString(knobs::KnobId::kTopoFile).empty()) return "NCCL_TOPO_FILE";
  return knobs::getString(knobs::KnobId::kHwlocXml).empty() ? "" : "WEFT_HWLOC_XML";
}

}  // namespace weft::topology
