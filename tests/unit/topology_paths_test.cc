// Path types and bandwidths on small systems built by hand, one rule per test.

#include <gtest/gtest.h>

#include "topology/paths.h"
#include "topology/system.h"

namespace weft::topology {
namespace {

// A system under construction: helpers that add typed nodes and links.
class Builder {
 public:
  int cpu(int numa) {
    Node node;
    node.type = NodeType::kCpu;
    node.cpu.numaId = numa;
    node.cpu.vendor = "GenuineIntel";
    node.cpuNuma = numa;
    return system.addNode(node);
  }
  int pciSwitch(int parent) { return below(parent, NodeType::kPciSwitch); }
  int gpu(int parent) { return below(parent, NodeType::kGpu); }
  int nic(int parent) { return below(parent, NodeType::kNic); }
  int nvSwitch() {
    Node node;
    node.type = NodeType::kNvSwitch;
    return system.addNode(node);
  }
  void nvlink(int a, int b, int count = 1) { system.addLink(a, b, LinkType::kNvLink, 20.0 * count, count); }

  System system;

 private:
  int below(int parent, NodeType type, double bandwidth = 24.0) {
    Node node;
    node.type = type;
    node.parent = parent;
    node.pci = PciAttributes{};
    node.cpuNuma = system.node(parent).cpuNuma;
    const int index = system.addNode(node);
    system.addLink(parent, index, LinkType::kPci, bandwidth);
    return index;
  }
};

PathType typeOf(const System& system, int a, int b) { return Paths(system).between(a, b).type; }

TEST(TopologyPaths, PciePathsAreTypedBySwitchesAndHostBridges) {
  Builder b;
  const int cpu0 = b.cpu(0);
  const int cpu1 = b.cpu(1);
  b.system.addLink(cpu0, cpu1, LinkType::kSys, 10.0);
  const int sw = b.pciSwitch(cpu0);
  const int gpu0 = b.gpu(sw);
  const int gpu1 = b.gpu(sw);
  const int nic0 = b.nic(sw);
  const int gpu2 = b.gpu(cpu0);
  const int gpu3 = b.gpu(cpu1);
  const Paths paths(b.system);
  EXPECT_EQ(paths.between(gpu0, gpu0).type, PathType::kLoc);
  EXPECT_EQ(paths.between(gpu0, gpu1).type, PathType::kPix);
  EXPECT_EQ(paths.between(gpu0, nic0).type, PathType::kPix);
  EXPECT_EQ(paths.between(gpu0, gpu2).type, PathType::kPhb);
  EXPECT_EQ(paths.between(gpu0, gpu3).type, PathType::kSys);
  EXPECT_EQ(paths.between(gpu3, nic0).type, PathType::kSys);
  EXPECT_EQ(paths.between(gpu0, gpu3).nodes, (std::vector<int>{gpu0, sw, cpu0, cpu1, gpu3}));
  EXPECT_DOUBLE_EQ(paths.between(gpu0, gpu3).bandwidth, 10.0);  // the CPU link is the slowest
  EXPECT_DOUBLE_EQ(paths.between(gpu0, gpu1).bandwidth, 24.0);
}

TEST(TopologyPaths, TwoSwitchesWithoutTheCpuArePxb) {
  Builder b;
  const int cpu = b.cpu(0);
  const int upper = b.pciSwitch(cpu);
  const int left = b.pciSwitch(upper);
  const int right = b.pciSwitch(upper);
  const int gpu = b.gpu(left);
  const int nic = b.nic(right);
  const int sameSide = b.gpu(left);
  EXPECT_EQ(typeOf(b.system, gpu, nic), PathType::kPxb);
  EXPECT_EQ(typeOf(b.system, gpu, sameSide), PathType::kPix);
}

TEST(TopologyPaths, NvlinkDirectThroughSwitchesAndThroughAnotherGpu) {
  Builder b;
  const int cpu = b.cpu(0);
  const int gpu0 = b.gpu(cpu);
  const int gpu1 = b.gpu(cpu);
  const int gpu2 = b.gpu(cpu);
  b.nvlink(gpu0, gpu1, 2);
  b.nvlink(gpu1, gpu2, 2);
  const Paths paths(b.system);
  EXPECT_EQ(paths.between(gpu0, gpu1).type, PathType::kNvl);
  EXPECT_DOUBLE_EQ(paths.between(gpu0, gpu1).bandwidth, 40.0);
  EXPECT_EQ(paths.between(gpu0, gpu2).type, PathType::kNvb);  // better than PHB through the CPU
  EXPECT_EQ(paths.between(gpu0, gpu2).nodes, (std::vector<int>{gpu0, gpu1, gpu2}));

  Builder s;
  const int cpu2 = s.cpu(0);
  const int nvs = s.nvSwitch();
  const int a = s.gpu(cpu2);
  const int c = s.gpu(cpu2);
  s.nvlink(a, nvs, 12);
  s.nvlink(c, nvs, 12);
  EXPECT_EQ(typeOf(s.system, a, c), PathType::kNvl);
}

TEST(TopologyPaths, AGpuFarFromTheNicReachesItThroughANvlinkPeer) {
  Builder b;
  const int cpu0 = b.cpu(0);
  const int cpu1 = b.cpu(1);
  b.system.addLink(cpu0, cpu1, LinkType::kSys, 10.0);
  const int sw = b.pciSwitch(cpu1);
  const int near = b.gpu(sw);
  const int nic = b.nic(sw);
  const int far = b.gpu(cpu0);
  b.nvlink(far, near, 4);
  const Paths paths(b.system);
  EXPECT_EQ(paths.between(far, nic).type, PathType::kPxn);
  EXPECT_EQ(paths.between(far, nic).nodes, (std::vector<int>{far, near, sw, nic}));
  // A GPU forwards to PCIe only towards a NIC: GPU-to-GPU over PCIe still goes through the CPUs.
  const int other = b.gpu(sw);
  EXPECT_EQ(Paths(b.system).between(far, other).type, PathType::kSys);
}

TEST(TopologyPaths, AGpuRelaysToANicOnlyBehindItsOwnSwitchesNeverThroughACpu) {
  // As on an 8-GPU NVSwitch box whose NIC hangs off the other socket's host bridge: NCCL relays
  // (PXN) only through a GPU whose own path to the NIC is PXB at worst.
  Builder b;
  const int cpu0 = b.cpu(0);
  const int cpu1 = b.cpu(1);
  b.system.addLink(cpu0, cpu1, LinkType::kSys, 10.0);
  const int near = b.gpu(b.pciSwitch(cpu1));
  const int nic = b.nic(cpu1);
  const int far = b.gpu(b.pciSwitch(cpu0));
  b.nvlink(far, near, 18);
  const Paths paths(b.system);
  EXPECT_EQ(paths.between(near, nic).type, PathType::kPhb);
  EXPECT_EQ(paths.between(far, nic).type, PathType::kSys);
  EXPECT_EQ(paths.between(nic, far).type, PathType::kSys);
}

TEST(TopologyPaths, AGraceGpuReachesItsNicThroughC2cBothWays) {
  Builder b;
  const int cpu = b.cpu(0);
  Node gpu;
  gpu.type = NodeType::kGpu;
  gpu.cpuNuma = 0;
  const int gh = b.system.addNode(gpu);
  b.system.addLink(gh, cpu, LinkType::kC2C, 360.0);
  const int nic = b.nic(cpu);
  const Paths paths(b.system);
  EXPECT_EQ(paths.between(gh, nic).type, PathType::kP2c);
  EXPECT_EQ(paths.between(nic, gh).type, PathType::kP2c);
  EXPECT_EQ(paths.between(gh, cpu).type, PathType::kC2c);
}

TEST(TopologyPaths, NodesWithoutAnyLinkAreDisconnected) {
  Builder b;
  const int cpu = b.cpu(0);
  const int gpu = b.gpu(cpu);
  const int lone = b.nvSwitch();
  const Paths paths(b.system);
  const Path& path = paths.between(gpu, lone);
  EXPECT_EQ(path.type, PathType::kDis);
  EXPECT_TRUE(path.nodes.empty());
  EXPECT_EQ(path.bandwidth, 0);
}

TEST(TopologyPaths, IntelSocketLinksHaveNcclsBandwidthPerGeneration) {
  auto intel = [](int model) {
    CpuAttributes cpu;
    cpu.arch = "x86_64";
    cpu.vendor = "GenuineIntel";
    cpu.familyId = 6;
    cpu.modelId = model;
    return cpuInterconnectBandwidth(cpu);
  };
  EXPECT_EQ(intel(0x4f), 6.0);   // Broadwell
  EXPECT_EQ(intel(0x55), 10.0);  // Skylake to Ice Lake
  EXPECT_EQ(intel(0x8f), 22.0);  // Sapphire Rapids
  EXPECT_EQ(intel(0xcf), 40.0);  // Emerald Rapids
}

TEST(TopologyPaths, TypesParseFromTheirNamesInAnyCase) {
  PathType type = PathType::kDis;
  ASSERT_TRUE(parsePathType("pxb", &type));
  EXPECT_EQ(type, PathType::kPxb);
  ASSERT_TRUE(parsePathType("SYS", &type));
  EXPECT_EQ(type, PathType::kSys);
  EXPECT_FALSE(parsePathType("PCI", &type));
  EXPECT_STREQ(pathTypeName(PathType::kP2c), "P2C");
}

}  // namespace
}  // namespace weft::topology
