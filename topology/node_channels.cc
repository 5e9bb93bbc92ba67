#include "topology/node_channels.h"

#include <algorithm>
#include <tuple>

#include "topology/gdr.h"

namespace weft::topology {

std::vector<NodeChannel> channelsAcrossNodes(const System& system, const Paths& paths, const RingSet& rings,
                                             const NetGdrPolicy& gdr) {
  const std::vector<int> gpus = system.nodesOfType(NodeType::kGpu);
  const std::vector<int> nics = system.nodesOfType(NodeType::kNic);
  std::vector<NodeChannel> channels;
  if (nics.empty() || rings.rings.empty()) return channels;
  const size_t count = std::max(rings.rings.size(), nics.size());
  for (size_t c = 0; c < count; ++c) {
    const std::vector<int>& ring = rings.rings[c % rings.rings.size()];
    NodeChannel channel;
    channel.nic = static_cast<int>(c % nics.size());
    const int nic = nics[channel.nic];
    std::vector<int> ringNodes;
    for (int gpu : ring) ringNodes.push_back(gpus[gpu]);
    const size_t start = cutNearNic(system, paths, ringNodes, nic, gdr);
    for (size_t i = 0; i < ring.size(); ++i) channel.chain.push_back(ring[(start + i) % ring.size()]);
    channel.entry = netPath(system, paths, gpus[channel.chain.front()], nic, gdr).fromNic.type;
    channel.exit = netPath(system, paths, gpus[channel.chain.back()], nic, gdr).toNic.type;
    channels.push_back(std::move(channel));
  }
  return channels;
}

size_t cutNearNic(const System& system, const Paths& paths, const std::vector<int>& ring, int nic,
                  const NetGdrPolicy& gdr) {
  // The chain starts at one ring position and ends at the one before: pick the cut whose worse
  // end is nearest the NIC, then whose better end is, then the widest (the first such on ties).
  auto cutKey = [&](size_t position) {
    const int first = ring[position];
    const int last = ring[(position + ring.size() - 1) % ring.size()];
    const Path in = netPath(system, paths, first, nic, gdr).fromNic;
    const Path out = netPath(system, paths, last, nic, gdr).toNic;
    return std::make_tuple(std::max(in.type, out.type), std::min(in.type, out.type),
                           -std::min(in.bandwidth, out.bandwidth));
  };
  size_t start = 0;
  for (size_t position = 1; position < ring.size(); ++position) {
    if (cutKey(position) < cutKey(start)) start = position;
  }
  return start;
}

}  // namespace weft::topology
