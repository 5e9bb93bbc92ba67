#include "topology/node_channels.h"

#include <algorithm>

namespace weft::topology {

std::vector<NodeChannel> channelsAcrossNodes(const System& system, const Paths& paths, const RingSet& rings) {
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
    // The ring position whose GPU is closest to the NIC starts the chain.
    size_t start = 0;
    for (size_t position = 1; position < ring.size(); ++position) {
      const Path& best = paths.between(nic, gpus[ring[start]]);
      const Path& here = paths.between(nic, gpus[ring[position]]);
      if (here.type < best.type || (here.type == best.type && here.bandwidth > best.bandwidth)) start = position;
    }
    for (size_t i = 0; i < ring.size(); ++i) channel.chain.push_back(ring[(start + i) % ring.size()]);
    channel.entry = paths.between(nic, gpus[channel.chain.front()]).type;
    channel.exit = paths.between(gpus[channel.chain.back()], nic).type;
    channels.push_back(std::move(channel));
  }
  return channels;
}

}  // namespace weft::topology
