#include "tools/weft/topo_command.h"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>

#include "topology/gdr.h"
#include "topology/load.h"
#include "topology/nvls.h"
#include "topology/paths.h"
#include "topology/search.h"
#include "tools/weft/nodes_report.h"
#include "tools/weft/topo_report.h"

namespace weft::tools {
namespace {

struct TopoOptions {
  std::string topoFile;
  bool json = false;
  int maxRings = 16;
  int nodes = 1;
};

int runTopo(const TopoOptions& options) {
  topology::System system;
  std::string file = options.topoFile;
  if (file.empty()) file = topology::configuredTopologyFile();
  Status status = topology::loadSystem(file, &system);
  if (!status.isOk()) {
    std::fprintf(stderr, "weft topo: %s\n", status.message().c_str());
    return 1;
  }
  TopoPolicies policies;
  status = topology::netGdrPolicyFromKnobs(&policies.gdr);
  if (status.isOk()) status = topology::p2pPolicyFromKnobs(&policies.p2p);
  policies.nvlsEnabled = topology::nvlsEnabledByKnob();
  if (!status.isOk()) {
    std::fprintf(stderr, "weft topo: %s\n", status.message().c_str());
    return 1;
  }
  const auto start = std::chrono::steady_clock::now();
  const topology::Paths paths(system);
  topology::RingSearchOptions search;
  search.maxRings = options.maxRings;
  const topology::RingSet rings = topology::searchRings(system, paths, search);
  NodesPlan plan;
  if (options.nodes > 1) plan = planNodes(system, paths, rings, options.nodes, policies.gdr);
  plan.searchMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (options.json) {
    nlohmann::json json = topoJson(system, paths, rings, policies);
    if (options.nodes > 1) json["across_nodes"] = nodesJson(plan);
    std::cout << json.dump(2) << "\n";
  } else {
    std::cout << topoText(system, paths, rings, policies, options.nodes > 1 ? nodesText(system, plan) : "");
  }
  return 0;
}

}  // namespace

void addTopoCommand(CLI::App& app, int* exitCode) {
  auto options = std::make_shared<TopoOptions>();
  CLI::App* topo = app.add_subcommand(
      "topo", "Print the machine's GPUs, NICs, the path type between each pair (as nvidia-smi topo -m) and "
              "the rings over its GPUs, detected with hwloc or read from a file (NCCL_TOPO_FILE or "
              "WEFT_HWLOC_XML if set)");
  topo->add_option("--topo-file", options->topoFile, "an NCCL topology XML or hwloc XML file to read instead");
  topo->add_flag("--json", options->json, "print JSON instead of text");
  topo->add_option("--max-rings", options->maxRings, "the most rings to search for (as NCCL_MAX_NCHANNELS)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  topo->add_option("--nodes", options->nodes,
                   "also show a job over N nodes like this one: each channel's NIC and GPU chain, and the "
                   "double binary tree over the nodes")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  topo->callback([options, exitCode]() { *exitCode = runTopo(*options); });
}

}  // namespace weft::tools
