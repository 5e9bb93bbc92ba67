#include "tools/weft/nodes_report.h"

#include <algorithm>
#include <cstdio>

namespace weft::tools {
namespace {

using topology::NodeType;

int rootOf(const NodesPlan& plan, int tree) {
  for (int node = 0; node < plan.nodes; ++node) {
    if (plan.trees[node][tree].parent < 0) return node;
  }
  return -1;
}

int depthOf(const NodesPlan& plan, int tree) {
  int deepest = 0;
  for (int node = 0; node < plan.nodes; ++node) {
    int depth = 0;
    for (int at = node; plan.trees[at][tree].parent >= 0; at = plan.trees[at][tree].parent) ++depth;
    deepest = std::max(deepest, depth);
  }
  return deepest;
}

std::string linkText(int node) { return node < 0 ? "-" : std::to_string(node); }

}  // namespace

NodesPlan planNodes(const topology::System& system, const topology::Paths& paths, const topology::RingSet& rings,
                    int nodes, const topology::NetGdrPolicy& gdr) {
  NodesPlan plan;
  plan.nodes = nodes;
  plan.channels = topology::channelsAcrossNodes(system, paths, rings, gdr);
  const std::vector<int> gpus = system.nodesOfType(NodeType::kGpu);
  const std::vector<int> nics = system.nodesOfType(NodeType::kNic);
  std::vector<int> channelsOnNic(nics.size(), 0);
  for (const topology::NodeChannel& channel : plan.channels) ++channelsOnNic[channel.nic];
  for (const topology::NodeChannel& channel : plan.channels) {
    const int nic = nics[channel.nic];
    const double in = topology::netPath(system, paths, gpus[channel.chain.front()], nic, gdr).fromNic.bandwidth;
    const double out = topology::netPath(system, paths, gpus[channel.chain.back()], nic, gdr).toNic.bandwidth;
    const double share = topology::nicBandwidth(system.node(nic)) / channelsOnNic[channel.nic];
    plan.channelBandwidth.push_back(std::min({rings.bandwidthPerRing, share, in, out}));
  }
  for (int node = 0; node < nodes; ++node) plan.trees.push_back(topology::doubleBinaryTreeLinks(nodes, node));
  return plan;
}

std::string nodesText(const topology::System& system, const NodesPlan& plan) {
  const std::vector<int> nics = system.nodesOfType(NodeType::kNic);
  const std::vector<int> gpus = system.nodesOfType(NodeType::kGpu);
  char line[256];
  std::snprintf(line, sizeof(line), "\nAcross %d nodes like this one (searched in %.1f ms):\n", plan.nodes,
                plan.searchMs);
  std::string out = line;
  if (plan.channels.empty()) {
    out += "  no channel: the system has no NIC or no ring, so its GPUs cannot reach another node.\n";
  }
  for (size_t c = 0; c < plan.channels.size(); ++c) {
    const topology::NodeChannel& channel = plan.channels[c];
    const topology::Node& nic = system.node(nics[channel.nic]);
    const std::string nicName = nic.nic.ports.empty() ? "" : " (" + nic.nic.ports.front().name + ")";
    out += "  Channel " + std::to_string(c) + ": NIC" + std::to_string(channel.nic) + nicName + " ->";
    for (int gpu : channel.chain) {
      const int dev = system.node(gpus[gpu]).gpu.dev;
      out += " GPU" + std::to_string(dev >= 0 ? dev : gpu);
    }
    std::snprintf(line, sizeof(line), " -> NIC%d (enters %s, leaves %s; %.1f GB/s)\n", channel.nic,
                  topology::pathTypeName(channel.entry), topology::pathTypeName(channel.exit),
                  plan.channelBandwidth[c]);
    out += line;
  }
  if (!plan.channels.empty()) {
    out += "  Each channel's ring runs through every node's chain in node order, node n-1's last GPU\n"
           "  sending to node n's first through the channel's NICs; a channel moves at most its GB/s\n"
           "  (the least of its ring inside the node, its share of the NIC, and the ways to and from it).\n";
  }
  for (int tree = 0; tree < 2; ++tree) {
    std::snprintf(line, sizeof(line), "  Tree %d: root node %d, depth %d, on every channel (each at most its GB/s)%s\n",
                  tree, rootOf(plan, tree), depthOf(plan, tree),
                  plan.nodes <= 16 ? ":" : " (the links of each node are in --json)");
    out += line;
    if (plan.nodes > 16) continue;
    for (int node = 0; node < plan.nodes; ++node) {
      const topology::TreeLinks& links = plan.trees[node][tree];
      out += "    node " + std::to_string(node) + ": parent " + linkText(links.parent) + ", children " +
             linkText(links.children[0]) + " " + linkText(links.children[1]) + "\n";
    }
  }
  out += "  Inside a node, each tree goes down a channel's chain from its first GPU.\n";
  return out;
}

nlohmann::json nodesJson(const NodesPlan& plan) {
  nlohmann::json json;
  json["nodes"] = plan.nodes;
  json["node_channels"] = nlohmann::json::array();
  for (size_t c = 0; c < plan.channels.size(); ++c) {
    const topology::NodeChannel& channel = plan.channels[c];
    json["node_channels"].push_back({{"nic", channel.nic},
                                     {"chain", channel.chain},
                                     {"entry", topology::pathTypeName(channel.entry)},
                                     {"exit", topology::pathTypeName(channel.exit)},
                                     {"bandwidth", plan.channelBandwidth[c]}});
  }
  json["trees"] = nlohmann::json::array();
  for (int tree = 0; tree < 2; ++tree) {
    nlohmann::json parents = nlohmann::json::array();
    nlohmann::json children = nlohmann::json::array();
    for (int node = 0; node < plan.nodes; ++node) {
      parents.push_back(plan.trees[node][tree].parent);
      children.push_back(plan.trees[node][tree].children);
    }
    json["trees"].push_back(
        {{"root", rootOf(plan, tree)}, {"depth", depthOf(plan, tree)}, {"parent", parents}, {"children", children}});
  }
  json["search_ms"] = plan.searchMs;
  return json;
}

}  // namespace weft::tools
