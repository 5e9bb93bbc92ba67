// Fuzzes the reader of NCCL's topology XML (topology/nccl_xml.h), which reads NCCL_TOPO_FILE: a
// file that users write by hand, edit, or take from another machine. For every input:
//  - parsing never crashes, and a refusal names the file;
//  - what is accepted, written back (writeNcclTopology), reads back, and writing that gives the
//    same text again (reader and writer agree on everything the writer writes);
//  - the paths and a small ring search over what is accepted never crash (small systems only, so
//    that each input stays fast).

#include <string>
#include <string_view>

#include "topology/nccl_xml.h"
#include "topology/paths.h"
#include "topology/search.h"
#include "tests/fuzz/fuzz_target.h"

namespace {

using weft::fuzz::requireProperty;
namespace topology = weft::topology;

constexpr char kName[] = "fuzzed.xml";
constexpr size_t kMostNodesToSearch = 48;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view xml(reinterpret_cast<const char*>(data), size);
  topology::System system;
  const weft::Status status = topology::parseNcclTopology(xml, kName, &system);
  if (!status.isOk()) {
    requireProperty(status.message().find(kName) != std::string::npos, "a refusal names the file");
    return 0;
  }
  const std::string written = topology::writeNcclTopology(system);
  topology::System again;
  requireProperty(topology::parseNcclTopology(written, "written.xml", &again).isOk(), "what is written reads back");
  requireProperty(topology::writeNcclTopology(again) == written, "what is read back writes the same text");
  if (system.nodes().size() <= kMostNodesToSearch) {
    const topology::Paths paths(system);
    topology::RingSearchOptions options;
    options.maxRings = 4;
    options.stepsPerRing = 2000;
    (void)topology::searchRings(system, paths, options);
  }
  return 0;
}
