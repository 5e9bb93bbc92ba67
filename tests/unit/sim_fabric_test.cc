// The modelled fabric of `weft sim` (sim/fabric.h) and the collectives timed over it
// (sim/collective_timing.h), on the project's H100 fixture: 8 GPUs with 18 NVLinks each to
// NVSwitches, 4 NICs of 400 Gb/s.

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "sim/collective_timing.h"
#include "sim/fabric.h"
#include "tests/unit/topology_fixture.h"

namespace weft::sim {
namespace {

namespace fs = std::filesystem;
using algorithms::Collective;

constexpr double kNvLinksPerGpu = 18 * 20.6;  // GB/s leaving (or entering) each GPU

topology::System loadFixture() { return tests::loadTopologyFixture("full-dump-h100x8-nvswitch.xml"); }

Fabric buildFabric(const topology::System& system, int nodes, double nicGbps = 0) {
  FabricOptions options;
  options.nodes = nodes;
  options.nicGbps = nicGbps;
  Fabric fabric;
  const Status status = Fabric::build(system, options, &fabric);
  EXPECT_TRUE(status.isOk()) << status.message();
  return fabric;
}

std::vector<Connection> ringConnections(const Fabric& fabric) {
  std::vector<Connection> connections;
  for (int c = 0; c < fabric.channels(); ++c) {
    const algorithms::Ring& ring = fabric.ring(c);
    for (size_t i = 0; i < ring.size(); ++i) connections.push_back({c, ring[i], ring[(i + 1) % ring.size()]});
  }
  return connections;
}

TEST(SimFabric, OneNodeSharesEachGpusNvLinksAmongTheRings) {
  const topology::System system = loadFixture();
  const Fabric fabric = buildFabric(system, 1);
  EXPECT_EQ(fabric.ranks(), 8);
  ASSERT_EQ(fabric.channels(), 18);  // one ring per NVLink of a GPU
  const std::vector<Connection> connections = ringConnections(fabric);
  const auto timings = fabric.share(connections);
  for (const Connection& connection : connections) {
    const LinkTiming& link = timings.at(Fabric::key(connection.channel, connection.from, connection.to));
    EXPECT_NEAR(link.bytesPerMicrosecond, kNvLinksPerGpu / 18 * 1000, 1e-6);
    EXPECT_DOUBLE_EQ(link.stepLatencyMicroseconds, 3.4);
    EXPECT_DOUBLE_EQ(link.pieceLatencyMicroseconds, 0.6);
  }
}

TEST(SimFabric, NodesAreJoinedThroughEveryNicEqually) {
  const topology::System system = loadFixture();
  const Fabric fabric = buildFabric(system, 3);
  EXPECT_EQ(fabric.ranks(), 24);
  ASSERT_EQ(fabric.channels() % 4, 0) << "every NIC carries as many channels";
  EXPECT_DOUBLE_EQ(fabric.nicGBps(), 50);
  const double channelsPerNic = fabric.channels() / 4.0;
  const std::vector<Connection> connections = ringConnections(fabric);
  const auto timings = fabric.share(connections);
  int across = 0;
  std::vector<double> leavingOverNvLink(fabric.ranks(), 0.0);  // GB/s x 1000
  for (const Connection& connection : connections) {
    const LinkTiming& link = timings.at(Fabric::key(connection.channel, connection.from, connection.to));
    if (connection.from / 8 == connection.to / 8) {
      leavingOverNvLink[connection.from] += link.bytesPerMicrosecond;
      continue;
    }
    ++across;
    EXPECT_DOUBLE_EQ(link.stepLatencyMicroseconds, 14.0);
    EXPECT_LE(link.bytesPerMicrosecond, 50 / channelsPerNic * 1000 + 1e-6);
  }
  EXPECT_EQ(across, 3 * fabric.channels()) << "each ring crosses between nodes once per node";
  // The shares of a GPU's NVLinks add up to no more than they carry (a GPU that sends to its own
  // NIC over PCIe on some channels leaves the others more).
  for (double total : leavingOverNvLink) EXPECT_LE(total, kNvLinksPerGpu * 1000 + 1e-6);
  // Each channel's chain holds every GPU of its node once.
  for (int c = 0; c < fabric.channels(); ++c) {
    ASSERT_EQ(fabric.chains(c).size(), 3u);
    const std::set<int> second(fabric.chains(c)[1].begin(), fabric.chains(c)[1].end());
    EXPECT_EQ(second, (std::set<int>{8, 9, 10, 11, 12, 13, 14, 15}));
  }
}

TEST(SimFabric, AGivenNicRateReplacesTheFilesPortSpeeds) {
  const topology::System system = loadFixture();
  EXPECT_DOUBLE_EQ(buildFabric(system, 2, 100).nicGBps(), 12.5);
}

TEST(SimFabric, SystemsThatCannotBeModelledSaySo) {
  topology::System system;
  topology::Node cpu;
  cpu.type = topology::NodeType::kCpu;
  const int socket = system.addNode(cpu);
  Fabric fabric;
  EXPECT_FALSE(Fabric::build(system, FabricOptions{}, &fabric).isOk());  // no GPU
  topology::Node gpu;
  gpu.type = topology::NodeType::kGpu;
  gpu.parent = socket;
  system.addLink(socket, system.addNode(gpu), topology::LinkType::kPci, 24);
  EXPECT_TRUE(Fabric::build(system, FabricOptions{}, &fabric).isOk());
  FabricOptions twoNodes;
  twoNodes.nodes = 2;
  const Status noNic = Fabric::build(system, twoNodes, &fabric);
  EXPECT_NE(noNic.message().find("no NIC"), std::string::npos) << noNic.message();
}

TEST(SimCollective, BusBandwidthFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::kAllReduce, 8), 2 * 7 / 8.0);
  EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::kAllGather, 8), 7 / 8.0);
  EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::kReduceScatter, 4), 3 / 4.0);
  EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::kBroadcast, 8), 1);
}

TEST(SimCollective, LargeRingAllReduceInOneNodeNearsTheNvLinkBound) {
  const topology::System system = loadFixture();
  const Fabric fabric = buildFabric(system, 1);
  const CollectiveTiming timing =
      timeCollective(fabric, Collective::kAllReduce, SimAlgorithm::kRing, size_t{4} << 30, TimingOptions{});
  ASSERT_TRUE(timing.ok()) << timing.error;
  EXPECT_LT(timing.busBandwidth, kNvLinksPerGpu);
  EXPECT_GT(timing.busBandwidth, 0.9 * kNvLinksPerGpu);
}

TEST(SimCollective, SmallAllReduceOverManyNodesIsFasterOnTheTree) {
  const topology::System system = loadFixture();
  const Fabric fabric = buildFabric(system, 16);
  const CollectiveTiming ring = timeCollective(fabric, Collective::kAllReduce, SimAlgorithm::kRing, 1024, TimingOptions{});
  const CollectiveTiming tree = timeCollective(fabric, Collective::kAllReduce, SimAlgorithm::kTree, 1024, TimingOptions{});
  ASSERT_TRUE(ring.ok() && tree.ok()) << ring.error << tree.error;
  // The ring waits for 2 x 127 hand-offs, 30 of them between nodes; the tree for two chains of 7
  // NVLink hops and 2 x 4 levels of nodes.
  EXPECT_NEAR(ring.microseconds, kLaunchMicroseconds + 2 * (15 * 14.0 + 112 * 3.4), 30);
  EXPECT_LT(tree.microseconds, ring.microseconds / 3);
}

TEST(SimCollective, SmallBroadcastAndReduceOverManyNodesWaitForTheTreesDepth) {
  const topology::System system = loadFixture();
  const Fabric fabric = buildFabric(system, 16);
  for (Collective collective : {Collective::kBroadcast, Collective::kReduce}) {
    const CollectiveTiming ring = timeCollective(fabric, collective, SimAlgorithm::kRing, 1024, TimingOptions{});
    const CollectiveTiming tree = timeCollective(fabric, collective, SimAlgorithm::kTree, 1024, TimingOptions{});
    ASSERT_TRUE(ring.ok() && tree.ok()) << ring.error << tree.error;
    // The ring: 127 hand-offs, 15 between nodes, at least NVLink's latency each. The tree: 4 levels
    // of nodes, and on the slowest channels the root's hop to its chain's first rank and a chain of
    // 7 NVLink hops.
    EXPECT_GT(ring.microseconds, kLaunchMicroseconds + 15 * 14.0 + 112 * 3.4 - 0.1) << collectiveName(collective);
    EXPECT_NEAR(tree.microseconds, kLaunchMicroseconds + 4 * 14.0 + 8 * 3.4, 1) << collectiveName(collective);
  }
}

TEST(SimCollective, LargeTreeReduceOverNodesMovesAsFastAsTheRing) {
  // Every channel's tree has the same root, rank 0; its chain's first rank (near the channel's
  // NIC), not rank 0, talks to the other node, so the channels' network traffic does not all
  // cross rank 0's PCIe link.
  const topology::System system = loadFixture();
  const Fabric fabric = buildFabric(system, 2);
  const size_t bytes = size_t{1} << 30;
  const CollectiveTiming ring = timeCollective(fabric, Collective::kReduce, SimAlgorithm::kRing, bytes, TimingOptions{});
  const CollectiveTiming tree = timeCollective(fabric, Collective::kReduce, SimAlgorithm::kTree, bytes, TimingOptions{});
  ASSERT_TRUE(ring.ok() && tree.ok()) << ring.error << tree.error;
  EXPECT_GT(tree.busBandwidth, 0.8 * ring.busBandwidth);
}

TEST(SimCollective, EveryCollectiveRunsOnTheRingTheOthersWhereModelled) {
  const topology::System system = loadFixture();
  const Fabric fabric = buildFabric(system, 2);
  for (Collective collective : {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
                                Collective::kBroadcast, Collective::kReduce}) {
    const CollectiveTiming timing = timeCollective(fabric, collective, SimAlgorithm::kRing, 1 << 20, TimingOptions{});
    EXPECT_TRUE(timing.ok()) << collectiveName(collective) << ": " << timing.error;
    EXPECT_GT(timing.busBandwidth, 0) << collectiveName(collective);
  }
  for (Collective collective : {Collective::kAllReduce, Collective::kBroadcast, Collective::kReduce}) {
    EXPECT_TRUE(timeCollective(fabric, collective, SimAlgorithm::kTree, 1 << 20, TimingOptions{}).ok())
        << collectiveName(collective);
  }
  EXPECT_FALSE(timeCollective(fabric, Collective::kAllGather, SimAlgorithm::kTree, 1024, TimingOptions{}).ok());
  EXPECT_FALSE(timeCollective(fabric, Collective::kAllReduce, SimAlgorithm::kPat, 1024, TimingOptions{}).ok());
  EXPECT_FALSE(timeCollective(fabric, Collective::kAllGather, SimAlgorithm::kRhd, 1024, TimingOptions{}).ok());
}

TEST(SimCollective, LogarithmicStepsWaitForOneHopEach) {
  // Small sizes: every exchange waits for one step latency of its hop's kind (NVLink 3.4 us,
  // network 14 us), plus the launch.
  const topology::System system = loadFixture();
  const Fabric oneNode = buildFabric(system, 1);
  // 8 ranks: 3 Bruck steps; rhd halves and doubles in 3 exchanges each.
  for (Collective collective : {Collective::kAllGather, Collective::kReduceScatter}) {
    const CollectiveTiming pat = timeCollective(oneNode, collective, SimAlgorithm::kPat, 1024, TimingOptions{});
    ASSERT_TRUE(pat.ok()) << pat.error;
    EXPECT_NEAR(pat.microseconds, kLaunchMicroseconds + 3 * 3.4, 0.1) << collectiveName(collective);
  }
  const CollectiveTiming rhd = timeCollective(oneNode, Collective::kAllReduce, SimAlgorithm::kRhd, 1024, TimingOptions{});
  ASSERT_TRUE(rhd.ok()) << rhd.error;
  EXPECT_NEAR(rhd.microseconds, kLaunchMicroseconds + 6 * 3.4, 0.1);
  // 4 nodes, 32 ranks: partners 1, 2 and 4 apart are on the node, 8 and 16 apart across.
  const Fabric fourNodes = buildFabric(system, 4);
  const CollectiveTiming across =
      timeCollective(fourNodes, Collective::kAllReduce, SimAlgorithm::kRhd, 128, TimingOptions{});
  ASSERT_TRUE(across.ok()) << across.error;
  EXPECT_NEAR(across.microseconds, kLaunchMicroseconds + 2 * (3 * 3.4 + 2 * 14.0), 0.5);
}

TEST(SimCollective, LogarithmicStepsShareTheLinksOnlyWithTheExchangesThatMoveAtOnce) {
  // A large AllGather on one node: Bruck's last step moves half the data over each rank's
  // NVLinks alone; were the links shared with every other step's connections, it would take
  // several times longer than the ring, which moves (n-1)/n of it spread over 18 channels.
  const topology::System system = loadFixture();
  const Fabric fabric = buildFabric(system, 1);
  const size_t bytes = size_t{1} << 30;
  const CollectiveTiming ring = timeCollective(fabric, Collective::kAllGather, SimAlgorithm::kRing, bytes, TimingOptions{});
  const CollectiveTiming pat = timeCollective(fabric, Collective::kAllGather, SimAlgorithm::kPat, bytes, TimingOptions{});
  ASSERT_TRUE(ring.ok() && pat.ok()) << ring.error << pat.error;
  EXPECT_LT(pat.microseconds, 2.5 * ring.microseconds);
  EXPECT_GT(pat.microseconds, ring.microseconds);  // one channel's connections, pieces one step after another
}

}  // namespace
}  // namespace weft::sim
