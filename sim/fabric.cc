#include "sim/fabric.h"

#include <algorithm>
#include <limits>

#include "topology/node_channels.h"
#include "topology/search.h"

namespace weft::sim {

using topology::LinkType;
using topology::NodeType;

Status Fabric::build(const topology::System& system, const FabricOptions& options, Fabric* out) {
  Fabric fabric;
  fabric.system_ = &system;
  fabric.paths_ = std::make_unique<topology::Paths>(system);
  fabric.options_ = options;
  fabric.nodes_ = options.nodes;
  fabric.gpus_ = system.nodesOfType(NodeType::kGpu);
  fabric.nics_ = system.nodesOfType(NodeType::kNic);
  fabric.gpusPerNode_ = static_cast<int>(fabric.gpus_.size());
  if (fabric.gpus_.empty()) return invalidArgument("%s has no GPU to simulate", system.source().c_str());
  if (options.nodes > 1 && fabric.nics_.empty()) {
    return invalidArgument("%s has no NIC, so its nodes cannot be joined", system.source().c_str());
  }
  topology::RingSearchOptions search;
  search.maxRings = options.maxChannels;
  topology::RingSet rings = topology::searchRings(system, *fabric.paths_, search);
  if (rings.rings.empty()) return invalidArgument("the GPUs of %s cannot be ringed", system.source().c_str());

  const int perNode = fabric.gpusPerNode_;
  if (options.nodes == 1) {
    for (const std::vector<int>& ring : rings.rings) {
      fabric.rings_.push_back(ring);
      fabric.chains_.push_back({ring});
      fabric.nicOfChannel_.push_back(-1);
    }
  } else {
    const size_t nicCount = fabric.nics_.size();
    if (rings.rings.size() > nicCount) rings.rings.resize(rings.rings.size() / nicCount * nicCount);
    const std::vector<topology::NodeChannel> channels =
        topology::channelsAcrossNodes(system, *fabric.paths_, rings, options.gdr);
    for (const topology::NodeChannel& channel : channels) {
      algorithms::Ring ring;
      std::vector<std::vector<int>> chains;
      for (int node = 0; node < options.nodes; ++node) {
        std::vector<int> chain;
        for (int gpu : channel.chain) chain.push_back(node * perNode + gpu);
        ring.insert(ring.end(), chain.begin(), chain.end());
        chains.push_back(std::move(chain));
      }
      fabric.rings_.push_back(std::move(ring));
      fabric.chains_.push_back(std::move(chains));
      fabric.nicOfChannel_.push_back(channel.nic);
    }
  }

  // Resource capacities (GB/s): the links, each GPU's NVLinks to NVSwitches out and in, each NIC
  // sending and receiving.
  const size_t links = system.links().size();
  fabric.capacity_.assign(links + 2 * fabric.gpus_.size() + 2 * fabric.nics_.size(), 0.0);
  for (size_t i = 0; i < links; ++i) {
    const topology::Link& link = system.links()[i];
    fabric.capacity_[i] = link.bandwidth;
    if (link.type != LinkType::kNvLink) continue;
    const NodeType fromType = system.node(link.from).type;
    const NodeType toType = system.node(link.to).type;
    for (int g = 0; g < perNode; ++g) {
      if (link.from == fabric.gpus_[g] && toType == NodeType::kNvSwitch) fabric.capacity_[links + g] += link.bandwidth;
      if (link.to == fabric.gpus_[g] && fromType == NodeType::kNvSwitch) {
        fabric.capacity_[links + perNode + g] += link.bandwidth;
      }
    }
  }
  fabric.nicSource_ = options.nicGbps > 0 ? "as given" : "the file's port speeds";
  for (size_t n = 0; n < fabric.nics_.size(); ++n) {
    const topology::Node& nic = system.node(fabric.nics_[n]);
    const double rate = options.nicGbps > 0 ? options.nicGbps / 8 : topology::nicBandwidth(nic);
    fabric.nicGBps_ = std::max(fabric.nicGBps_, rate);
    fabric.capacity_[links + 2 * perNode + n] = rate;
    fabric.capacity_[links + 2 * perNode + fabric.nics_.size() + n] = rate;
  }
  *out = std::move(fabric);
  return Status::ok();
}

void Fabric::addPath(const topology::Path& path, std::vector<int>* resources) const {
  const size_t links = system_->links().size();
  auto gpuIndex = [&](int node) {
    return static_cast<int>(std::find(gpus_.begin(), gpus_.end(), node) - gpus_.begin());
  };
  for (size_t i = 0; i + 1 < path.nodes.size(); ++i) {
    const int u = path.nodes[i];
    const int v = path.nodes[i + 1];
    int best = -1;
    for (int index : system_->linksFrom(u)) {
      const topology::Link& link = system_->links()[index];
      if (link.to == v && (best < 0 || link.bandwidth > system_->links()[best].bandwidth)) best = index;
    }
    if (best < 0) continue;
    const topology::Link& link = system_->links()[best];
    const bool viaSwitch = system_->node(u).type == NodeType::kNvSwitch || system_->node(v).type == NodeType::kNvSwitch;
    if (link.type == LinkType::kNvLink && viaSwitch) {
      if (system_->node(u).type == NodeType::kGpu) resources->push_back(static_cast<int>(links) + gpuIndex(u));
      if (system_->node(v).type == NodeType::kGpu) {
        resources->push_back(static_cast<int>(links + gpus_.size()) + gpuIndex(v));
      }
    } else {
      resources->push_back(best);
    }
  }
}

Fabric::Route Fabric::routeWithin(int fromGpu, int toGpu) const {
  Route route;
  addPath(paths_->between(gpus_[fromGpu], gpus_[toGpu]), &route.here);
  const topology::PathType type = paths_->between(gpus_[fromGpu], gpus_[toGpu]).type;
  route.kind = type <= topology::PathType::kC2c ? &HopKinds::nvlink : &HopKinds::pci;
  return route;
}

Fabric::Route Fabric::routeAcross(int fromGpu, int toGpu, int nic) const {
  Route route;
  const int links = static_cast<int>(system_->links().size());
  const int perNode = gpusPerNode_;
  // Without GPUDirect RDMA (NCCL_NET_GDR_LEVEL) the data passes through the GPU's host memory.
  addPath(topology::netPath(*system_, *paths_, gpus_[fromGpu], nics_[nic], options_.gdr).toNic, &route.here);
  route.here.push_back(links + 2 * perNode + nic);  // the NIC sending
  route.there.push_back(links + 2 * perNode + static_cast<int>(nics_.size()) + nic);  // the NIC receiving
  addPath(topology::netPath(*system_, *paths_, gpus_[toGpu], nics_[nic], options_.gdr).fromNic, &route.there);
  route.kind = &HopKinds::network;
  return route;
}

std::unordered_map<uint64_t, LinkTiming> Fabric::share(std::span<const Connection> connections) const {
  const size_t perNodeResources = capacity_.size();
  // Each connection's resources as global ids (node x resources + local id).
  std::vector<std::vector<size_t>> used(connections.size());
  std::vector<double HopKinds::*> kind(connections.size());
  std::vector<uint32_t> users(perNodeResources * nodes_, 0);
  for (size_t i = 0; i < connections.size(); ++i) {
    const Connection& connection = connections[i];
    const int fromNode = connection.from / gpusPerNode_;
    const int toNode = connection.to / gpusPerNode_;
    const int fromGpu = connection.from % gpusPerNode_;
    const int toGpu = connection.to % gpusPerNode_;
    const Route route = fromNode == toNode ? routeWithin(fromGpu, toGpu)
                                           : routeAcross(fromGpu, toGpu, nicOfChannel_[connection.channel]);
    auto use = [&](int node, const std::vector<int>& resources) {
      for (int resource : resources) {
        used[i].push_back(static_cast<size_t>(node) * perNodeResources + static_cast<size_t>(resource));
        ++users[used[i].back()];
      }
    };
    use(fromNode, route.here);
    use(toNode, route.there);
    kind[i] = route.kind;
  }
  std::unordered_map<uint64_t, LinkTiming> timings;
  timings.reserve(connections.size());
  for (size_t i = 0; i < connections.size(); ++i) {
    double gbps = std::numeric_limits<double>::infinity();
    for (size_t resource : used[i]) gbps = std::min(gbps, capacity_[resource % perNodeResources] / users[resource]);
    const Connection& connection = connections[i];
    const HopLatencies& latency = options_.latency;
    timings[key(connection.channel, connection.from, connection.to)] =
        LinkTiming{gbps * 1000, latency.piece.*kind[i], latency.step.*kind[i]};
  }
  return timings;
}

}  // namespace weft::sim
