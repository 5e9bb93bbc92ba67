// The channels of a job over several nodes (topology/node_channels.h), on the project's fixtures.

#include "topology/node_channels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>

#include "tests/unit/topology_fixture.h"

namespace weft::topology {
namespace {

struct Loaded {
  System system;
  std::vector<NodeChannel> channels;
  RingSet rings;
};

Loaded load(const std::string& name) {
  Loaded loaded;
  loaded.system = tests::loadTopologyFixture(name);
  const Paths paths(loaded.system);
  loaded.rings = searchRings(loaded.system, paths);
  loaded.channels = channelsAcrossNodes(loaded.system, paths, loaded.rings);
  return loaded;
}

// `chain` is `ring` turned to start elsewhere.
bool isRotationOf(const std::vector<int>& chain, const std::vector<int>& ring) {
  if (chain.size() != ring.size() || chain.empty()) return false;
  const auto start = std::find(ring.begin(), ring.end(), chain.front());
  if (start == ring.end()) return false;
  std::vector<int> rotated(start, ring.end());
  rotated.insert(rotated.end(), ring.begin(), start);
  return rotated == chain;
}

// Channel c uses NIC c mod `nics`, runs ring c mod the ring count turned, and enters and leaves
// the node through paths of type `ends`.
void expectRailsAndRotations(const Loaded& loaded, int nics, PathType ends) {
  for (size_t c = 0; c < loaded.channels.size(); ++c) {
    const NodeChannel& channel = loaded.channels[c];
    EXPECT_EQ(channel.nic, static_cast<int>(c % nics)) << "channel " << c;
    EXPECT_TRUE(isRotationOf(channel.chain, loaded.rings.rings[c % loaded.rings.rings.size()])) << "channel " << c;
    EXPECT_EQ(channel.entry, ends) << "channel " << c;
    EXPECT_EQ(channel.exit, ends) << "channel " << c << " leaves far from its NIC";
  }
}

TEST(ChannelsAcrossNodes, NvSwitchBoxSpreadsItsRingsOverTheNicsAndEntersNextToThem) {
  // 8 H100s on NVSwitches, 4 NICs each under the PCIe switch of two GPUs: 16 rings, 16 channels.
  const Loaded h100 = load("full-dump-h100x8-nvswitch.xml");
  ASSERT_EQ(h100.rings.rings.size(), 16u);
  ASSERT_EQ(h100.channels.size(), 16u);
  // Data enters and leaves at GPUs behind the NIC's own PCIe switch, not through another GPU.
  expectRailsAndRotations(h100, 4, PathType::kPxb);
}

TEST(ChannelsAcrossNodes, OneRingIsRepeatedSoThatEveryNicCarriesAChannel) {
  // 8 A100s on PCIe under two sockets (the flattened file), 4 NICs: one ring, four channels.
  const Loaded a100 = load("flattened-a100x8.xml");
  ASSERT_EQ(a100.rings.rings.size(), 1u);
  ASSERT_EQ(a100.channels.size(), 4u);
  expectRailsAndRotations(a100, 4, PathType::kPix);
  // The channels enter at different GPUs (each next to its own NIC).
  std::vector<int> entries;
  for (const NodeChannel& channel : a100.channels) entries.push_back(channel.chain.front());
  std::sort(entries.begin(), entries.end());
  EXPECT_EQ(std::unique(entries.begin(), entries.end()), entries.end());
}

TEST(ChannelsAcrossNodes, NoNicMeansNoChannelAcrossNodes) {
  System system;
  Node cpu;
  cpu.type = NodeType::kCpu;
  cpu.cpu.numaId = 0;
  const int socket = system.addNode(cpu);
  Node gpu;
  gpu.type = NodeType::kGpu;
  gpu.parent = socket;
  system.addLink(socket, system.addNode(gpu), LinkType::kPci, 24);
  const Paths paths(system);
  EXPECT_TRUE(channelsAcrossNodes(system, paths, searchRings(system, paths)).empty());
}

}  // namespace
}  // namespace weft::topology
