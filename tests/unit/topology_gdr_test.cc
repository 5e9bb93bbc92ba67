// GPUDirect RDMA between GPUs and NICs (topology/gdr.h), NCCL_NET_GDR_LEVEL, on the project's
// fixtures.

#include "topology/gdr.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "tests/harness/scoped_env.h"
#include "tests/unit/topology_fixture.h"
#include "topology/node_channels.h"
#include "topology/search.h"

namespace weft::topology {
namespace {

System load(const std::string& name) { return tests::loadTopologyFixture(name); }

bool passesThroughCpu(const System& system, const Path& path) {
  return std::any_of(path.nodes.begin() + 1, path.nodes.end() - 1,
                     [&](int node) { return system.node(node).type == NodeType::kCpu; });
}

TEST(NetGdr, ByDefaultOnlyNicsBehindTheGpusSwitchesReachItsMemory) {
  // 8 A100s on PCIe under two sockets, a NIC beside each pair of GPUs (PIX); no NVLink to relay.
  const System system = load("flattened-a100x8.xml");
  const Paths paths(system);
  int direct = 0;
  int staged = 0;
  for (int gpu : system.nodesOfType(NodeType::kGpu)) {
    int reached = 0;
    for (int nic : system.nodesOfType(NodeType::kNic)) {
      const NetPath net = netPath(system, paths, gpu, nic, NetGdrPolicy{});
      const PathType own = paths.between(gpu, nic).type;
      if (net.gdr) {
        ++reached;
        ++direct;
        EXPECT_LE(net.distance, PathType::kPxb);
        EXPECT_EQ(net.toNic.nodes, paths.between(gpu, nic).nodes);
        EXPECT_EQ(net.fromNic.nodes, paths.between(nic, gpu).nodes);
      } else {
        ++staged;
        EXPECT_GT(net.distance, PathType::kPxb) << pathTypeName(net.distance);
        // Through host memory: at the CPU, typed no better than PHB, and never better than the
        // GPU's own path to the NIC.
        EXPECT_TRUE(passesThroughCpu(system, net.toNic));
        EXPECT_TRUE(passesThroughCpu(system, net.fromNic));
        EXPECT_GE(net.toNic.type, std::max(own, PathType::kPhb));
        EXPECT_EQ(net.toNic.nodes.front(), gpu);
        EXPECT_EQ(net.toNic.nodes.back(), nic);
        EXPECT_EQ(net.fromNic.nodes.front(), nic);
        EXPECT_EQ(net.fromNic.nodes.back(), gpu);
      }
    }
    EXPECT_EQ(reached, 1) << "every GPU of this box shares a PCIe switch with one NIC";
  }
  EXPECT_EQ(direct, 8);
  EXPECT_EQ(staged, 24);
}

TEST(NetGdr, ASourceSayingAGpuOrNicCannotDoItRulesItOut) {
  // gdr="0", as NCCL writes for consumer GPUs and for networks without GPU pointers.
  System system = load("flattened-a100x8.xml");
  const Paths paths(system);
  const int gpu = system.nodesOfType(NodeType::kGpu).front();
  int nic = -1;
  for (int candidate : system.nodesOfType(NodeType::kNic)) {
    if (netPath(system, paths, gpu, candidate, NetGdrPolicy{}).gdr) nic = candidate;
  }
  ASSERT_GE(nic, 0);
  system.mutableNode(gpu).gpu.gdr = false;
  EXPECT_FALSE(netPath(system, paths, gpu, nic, NetGdrPolicy{PathType::kSys}).gdr);
  EXPECT_FALSE(netPath(system, paths, gpu, nic, NetGdrPolicy{}).capable);
  system.mutableNode(gpu).gpu.gdr = true;
  EXPECT_TRUE(netPath(system, paths, gpu, nic, NetGdrPolicy{}).gdr);
  std::vector<NetPort>& ports = system.mutableNode(nic).nic.ports;
  ports.resize(2);
  ports[0].gdr = false;
  EXPECT_TRUE(netPath(system, paths, gpu, nic, NetGdrPolicy{}).gdr) << "one port of the NIC can";
  ports[1].gdr = false;
  const NetPath staged = netPath(system, paths, gpu, nic, NetGdrPolicy{PathType::kSys});
  EXPECT_FALSE(staged.gdr);
  EXPECT_TRUE(passesThroughCpu(system, staged.toNic));
}

TEST(NetGdr, AGpuRelayingOverNvLinkIsJudgedByTheRelaysDistance) {
  // 8 H100s on NVSwitches; each of the 4 NICs sits under the PCIe switches of two GPUs. A GPU
  // reaches the other NICs through the GPU beside them (PXN), whose distance is PXB.
  const System system = load("full-dump-h100x8-nvswitch.xml");
  const Paths paths(system);
  int relayed = 0;
  for (int gpu : system.nodesOfType(NodeType::kGpu)) {
    for (int nic : system.nodesOfType(NodeType::kNic)) {
      const NetPath net = netPath(system, paths, gpu, nic, NetGdrPolicy{});
      EXPECT_TRUE(net.gdr);
      EXPECT_EQ(net.distance, PathType::kPxb);
      EXPECT_EQ(net.toNic.nodes, paths.between(gpu, nic).nodes);
      if (net.toNic.type == PathType::kPxn) ++relayed;
    }
  }
  EXPECT_EQ(relayed, 8 * 3);
}

TEST(NetGdr, TheLevelDecides) {
  const System system = load("full-dump-h100x8-nvswitch.xml");
  const Paths paths(system);
  for (int gpu : system.nodesOfType(NodeType::kGpu)) {
    for (int nic : system.nodesOfType(NodeType::kNic)) {
      EXPECT_FALSE(netPath(system, paths, gpu, nic, NetGdrPolicy{PathType::kLoc}).gdr);  // LOC: never
      EXPECT_TRUE(netPath(system, paths, gpu, nic, NetGdrPolicy{PathType::kSys}).gdr);   // SYS: any path on the host
      const NetPath pix = netPath(system, paths, gpu, nic, NetGdrPolicy{PathType::kPix});
      EXPECT_EQ(pix.gdr, pix.distance <= PathType::kPix);
    }
  }
}

TEST(NetGdr, WithoutItTheChannelsEnterThroughHostMemory) {
  const System system = load("full-dump-h100x8-nvswitch.xml");
  const Paths paths(system);
  const RingSet rings = searchRings(system, paths);
  const std::vector<NodeChannel> staged = channelsAcrossNodes(system, paths, rings, NetGdrPolicy{PathType::kLoc});
  ASSERT_EQ(staged.size(), 16u);
  for (const NodeChannel& channel : staged) {
    EXPECT_EQ(channel.entry, PathType::kPhb);
    EXPECT_EQ(channel.exit, PathType::kPhb);
  }
  const std::vector<NodeChannel> direct = channelsAcrossNodes(system, paths, rings, NetGdrPolicy{});
  ASSERT_EQ(direct.size(), 16u);
  for (const NodeChannel& channel : direct) EXPECT_EQ(channel.entry, PathType::kPxb);
}

TEST(NetGdr, AGpuWithAChipToChipLinkReachesItsCpusNicUnlessNcclNetGdrC2cIsOff) {
  const System system = load("grace-hopper-c2c.xml");
  const Paths paths(system);
  int p2c = 0;
  for (int gpu : system.nodesOfType(NodeType::kGpu)) {
    for (int nic : system.nodesOfType(NodeType::kNic)) {
      const NetPath net = netPath(system, paths, gpu, nic, NetGdrPolicy{});
      if (net.distance != PathType::kP2c) continue;
      ++p2c;
      EXPECT_TRUE(net.gdr);
      // The pair counts as C2C under any level but LOC, as NCCL's NCCL_NET_GDR_C2C=1 has it.
      EXPECT_TRUE(netPath(system, paths, gpu, nic, NetGdrPolicy{PathType::kPix}).gdr);
      EXPECT_FALSE(netPath(system, paths, gpu, nic, NetGdrPolicy{PathType::kLoc}).gdr);
      EXPECT_FALSE(netPath(system, paths, gpu, nic, NetGdrPolicy{std::nullopt, false}).gdr);
      EXPECT_TRUE(netPath(system, paths, gpu, nic, NetGdrPolicy{PathType::kP2c, false}).gdr);
    }
  }
  EXPECT_GT(p2c, 0) << "the fixture has a NIC on the CPU of a C2C GPU";
}

TEST(NetGdr, TheKnobsTakeNcclsValues) {
  NetGdrPolicy policy{PathType::kSys, false};
  {
    harness::ScopedEnv env({{"NCCL_NET_GDR_LEVEL", std::nullopt}, {"NCCL_NET_GDR_C2C", std::nullopt}});
    ASSERT_TRUE(netGdrPolicyFromKnobs(&policy).isOk());
    EXPECT_FALSE(policy.level.has_value());
    EXPECT_TRUE(policy.c2c);
  }
  {
    harness::ScopedEnv env({{"NCCL_NET_GDR_LEVEL", "phb"}, {"NCCL_NET_GDR_C2C", "0"}});
    ASSERT_TRUE(netGdrPolicyFromKnobs(&policy).isOk());
    EXPECT_EQ(policy.level, PathType::kPhb);
    EXPECT_FALSE(policy.c2c);
  }
  {
    harness::ScopedEnv env("NCCL_NET_GDR_LEVEL", "2");  // NCCL's legacy number for PXB
    ASSERT_TRUE(netGdrPolicyFromKnobs(&policy).isOk());
    EXPECT_EQ(policy.level, PathType::kPxb);
  }
  {
    harness::ScopedEnv env("NCCL_NET_GDR_LEVEL", "near");
    const Status status = netGdrPolicyFromKnobs(&policy);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(status.message().find("NCCL_NET_GDR_LEVEL=near is not a level"), std::string::npos) << status.message();
  }
}

}  // namespace
}  // namespace weft::topology
