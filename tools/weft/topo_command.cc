#include "tools/weft/topo_command.h"

#include <cstdio>
#include <iostream>
#include <memory>

#include "src/base/knobs.h"
#include "topology/load.h"
#include "topology/paths.h"
#include "topology/search.h"
#include "tools/weft/topo_report.h"

namespace weft::tools {
namespace {

struct TopoOptions {
  std::string topoFile;
  bool json = false;
  int maxRings = 16;
};

int runTopo(const TopoOptions& options) {
  topology::System system;
  std::string file = options.topoFile;
  if (file.empty()) file = knobs::getString(knobs::KnobId::kTopoFile);
  Status status = topology::loadSystem(file, &system);
  if (!status.isOk()) {
    std::fprintf(stderr, "weft topo: %s\n", status.message().c_str());
    return 1;
  }
  const topology::Paths paths(system);
  topology::RingSearchOptions search;
  search.maxRings = options.maxRings;
  const topology::RingSet rings = topology::searchRings(system, paths, search);
  if (options.json) {
    std::cout << topoJson(system, paths, rings).dump(2) << "\n";
  } else {
    std::cout << topoText(system, paths, rings);
  }
  return 0;
}

}  // namespace

void addTopoCommand(CLI::App& app, int* exitCode) {
  auto options = std::make_shared<TopoOptions>();
  CLI::App* topo = app.add_subcommand(
      "topo", "Print the machine's GPUs, NICs, the path type between each pair (as nvidia-smi topo -m) and "
              "the rings over its GPUs, detected with hwloc or read from a file (NCCL_TOPO_FILE if set)");
  topo->add_option("--topo-file", options->topoFile, "an NCCL topology XML or hwloc XML file to read instead");
  topo->add_flag("--json", options->json, "print JSON instead of text");
  topo->add_option("--max-rings", options->maxRings, "the most rings to search for (as NCCL_MAX_NCHANNELS)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  topo->callback([options, exitCode]() { *exitCode = runTopo(*options); });
}

}  // namespace weft::tools
