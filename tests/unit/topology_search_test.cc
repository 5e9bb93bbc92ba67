// The ring search on small systems built by hand (one rule per test), on every real machine of
// ../shared/topologies, and the ring order of ranks on host memory.

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>
#include <string>

#include "topology/hwloc_detector.h"
#include "topology/nccl_xml.h"
#include "topology/search.h"

namespace weft::topology {
namespace {

namespace fs = std::filesystem;

constexpr double kPcieGen4 = 24.0;
constexpr double kUpi = 10.0;

// A machine drawn by hand: sockets, PCIe devices below them, NVLinks.
struct Sketch {
  System system;

  int socket(int numa) {
    Node cpu;
    cpu.type = NodeType::kCpu;
    cpu.cpu.numaId = numa;
    cpu.cpuNuma = numa;
    const int index = system.addNode(cpu);
    for (int other : system.nodesOfType(NodeType::kCpu)) {
      if (other != index) system.addLink(other, index, LinkType::kSys, kUpi);
    }
    return index;
  }
  int attach(NodeType type, int parent) {
    Node device;
    device.type = type;
    device.parent = parent;
    device.cpuNuma = system.node(parent).cpuNuma;
    const int index = system.addNode(device);
    system.addLink(parent, index, LinkType::kPci, kPcieGen4);
    return index;
  }
  int nvSwitch() {
    Node node;
    node.type = NodeType::kNvSwitch;
    return system.addNode(node);
  }
  void nvlinks(int a, int b, int count, double perLink) {
    system.addLink(a, b, LinkType::kNvLink, perLink * count, count);
  }
};

RingSet search(const System& system, int maxRings = 16) {
  RingSearchOptions options;
  options.maxRings = maxRings;
  return searchRings(system, Paths(system), options);
}

// Paths and rings of `system`, which must take under two seconds (generous for a loaded machine).
RingSet timedSearch(const System& system) {
  const auto start = std::chrono::steady_clock::now();
  const RingSet set = searchRings(system, Paths(system));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 2.0);
  return set;
}

// The ring lists every GPU index once.
void expectVisitsEveryGpuOnce(const std::vector<int>& ring, size_t gpus) {
  std::vector<int> sorted = ring;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> expected(gpus);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(sorted, expected);
}

// Hops, ring closing included, between GPUs of different NUMA nodes.
int numaCrossings(const System& system, const std::vector<int>& ring) {
  const std::vector<int> gpus = system.nodesOfType(NodeType::kGpu);
  int crossings = 0;
  for (size_t i = 0; i < ring.size(); ++i) {
    const int next = ring[(i + 1) % ring.size()];
    crossings += system.node(gpus[ring[i]]).cpuNuma != system.node(gpus[next]).cpuNuma ? 1 : 0;
  }
  return crossings;
}

// Whether GPU indices a and b follow each other in the ring (either way round).
bool neighbours(const std::vector<int>& ring, int a, int b) {
  for (size_t i = 0; i < ring.size(); ++i) {
    const int next = ring[(i + 1) % ring.size()];
    if ((ring[i] == a && next == b) || (ring[i] == b && next == a)) return true;
  }
  return false;
}

// NVL rings of `perRing` GB/s, between `fewest` and `most` of them, each over all `gpus` GPUs.
void expectNvlinkRings(const RingSet& set, size_t gpus, double perRing, size_t fewest, size_t most) {
  EXPECT_EQ(set.worstHop, PathType::kNvl);
  EXPECT_DOUBLE_EQ(set.bandwidthPerRing, perRing);
  EXPECT_GE(set.rings.size(), fewest);
  EXPECT_LE(set.rings.size(), most);
  for (const std::vector<int>& ring : set.rings) expectVisitsEveryGpuOnce(ring, gpus);
}

TEST(TopologyRingSearch, TwoSocketsOfPcieGpusAreCrossedExactlyTwice) {
  Sketch s;
  const int socket0 = s.socket(0);
  const int socket1 = s.socket(1);
  // GPUs numbered alternately across the sockets, so that GPU order alone would cross 8 times.
  for (int i = 0; i < 8; ++i) s.attach(NodeType::kGpu, i % 2 == 0 ? socket0 : socket1);
  const RingSet set = search(s.system);
  ASSERT_EQ(set.rings.size(), 1u);  // the one UPI link is all that the ring has crossing sockets
  expectVisitsEveryGpuOnce(set.rings[0], 8);
  EXPECT_EQ(set.rings[0].front(), 0);
  EXPECT_EQ(numaCrossings(s.system, set.rings[0]), 2);
  EXPECT_EQ(set.worstHop, PathType::kSys);
  EXPECT_DOUBLE_EQ(set.bandwidthPerRing, kUpi);
}

TEST(TopologyRingSearch, NvlinkPeersAreNeighboursInEveryRing) {
  // Four PCIe GPUs on one socket; NVLink bridges join 0 with 2 and 1 with 3.
  Sketch s;
  const int socket = s.socket(0);
  std::vector<int> gpu;
  for (int i = 0; i < 4; ++i) gpu.push_back(s.attach(NodeType::kGpu, socket));
  s.nvlinks(gpu[0], gpu[2], 4, 20.0);
  s.nvlinks(gpu[1], gpu[3], 4, 20.0);
  const RingSet set = search(s.system);
  EXPECT_EQ(set.worstHop, PathType::kPhb);
  // One ring moves one NVLink's 20 GB/s; the two PCIe hops of a ring leave the other direction of
  // every PCIe link free for a second ring, and a third would find 4 GB/s left.
  ASSERT_EQ(set.rings.size(), 2u);
  EXPECT_DOUBLE_EQ(set.bandwidthPerRing, 20.0);
  for (const std::vector<int>& ring : set.rings) {
    expectVisitsEveryGpuOnce(ring, 4);
    EXPECT_TRUE(neighbours(ring, 0, 2));
    EXPECT_TRUE(neighbours(ring, 1, 3));
  }
}

TEST(TopologyRingSearch, NvSwitchBoxGivesNvlinkRingsUntilItsLinksAreFull) {
  // Eight Hopper GPUs on two sockets, 18 NVLinks each to the NVSwitches (one node, as NCCL has it).
  Sketch s;
  const int socket0 = s.socket(0);
  const int socket1 = s.socket(1);
  const int fabric = s.nvSwitch();
  for (int i = 0; i < 8; ++i) s.nvlinks(s.attach(NodeType::kGpu, i < 4 ? socket0 : socket1), fabric, 18, 20.6);
  expectNvlinkRings(search(s.system), 8, 20.6, 16, 16);  // maxRings
  // Without the cap, 18 rings of one NVLink each fill the 18 NVLinks of every GPU.
  EXPECT_EQ(search(s.system, 64).rings.size(), 18u);
  EXPECT_EQ(search(s.system, 3).rings.size(), 3u);
}

TEST(TopologyRingSearch, RingsSpreadOverParallelNvSwitches) {
  // A DGX-2 baseboard in small: each GPU has one 25 GB/s NVLink to each of three NVSwitches.
  Sketch s;
  const int socket = s.socket(0);
  std::vector<int> gpu;
  for (int i = 0; i < 4; ++i) gpu.push_back(s.attach(NodeType::kGpu, socket));
  for (int k = 0; k < 3; ++k) {
    const int nvSwitch = s.nvSwitch();
    for (int g : gpu) s.nvlinks(g, nvSwitch, 1, 25.0);
  }
  expectNvlinkRings(search(s.system), 4, 25.0, 3, 3);  // one ring through each switch
}

TEST(TopologyRingSearch, HybridCubeMeshGivesNvlinkRingsOverItsLinks) {
  // DGX-1 with V100s: six NVLinks per GPU, to four peers, some doubled; the others are two hops away.
  Sketch s;
  const int socket0 = s.socket(0);
  const int socket1 = s.socket(1);
  std::vector<int> gpu;
  for (int i = 0; i < 8; ++i) gpu.push_back(s.attach(NodeType::kGpu, i < 4 ? socket0 : socket1));
  const int links[][3] = {{0, 1, 1}, {0, 2, 1}, {0, 3, 2}, {0, 4, 2}, {1, 2, 2}, {1, 3, 1}, {1, 5, 2},
                          {2, 3, 2}, {2, 6, 1}, {3, 7, 1}, {4, 5, 1}, {4, 6, 1}, {4, 7, 2}, {5, 6, 2},
                          {5, 7, 1}, {6, 7, 2}};
  for (const auto& [a, b, count] : links) s.nvlinks(gpu[a], gpu[b], count, 20.0);
  // Each ring sends one NVLink's worth out of every GPU: six NVLinks per GPU make six rings at most;
  // taking the doubled links first, the search packs five.
  expectNvlinkRings(timedSearch(s.system), 8, 20.0, 5, 6);
}

TEST(TopologyRingSearch, TwoNvSwitchBaseboardsJoinedByTrunksGiveNvlinkRings) {
  // DGX-2: 16 GPUs, each with one NVLink to each of the six NVSwitches of its baseboard (socket);
  // each switch has eight NVLinks to its twin on the other baseboard.
  Sketch s;
  const int sockets[] = {s.socket(0), s.socket(1)};
  std::vector<int> switches[2];
  for (int board = 0; board < 2; ++board) {
    for (int k = 0; k < 6; ++k) switches[board].push_back(s.nvSwitch());
  }
  for (int k = 0; k < 6; ++k) s.nvlinks(switches[0][k], switches[1][k], 8, 25.0);
  for (int i = 0; i < 16; ++i) {
    const int board = i / 8;
    const int gpu = s.attach(NodeType::kGpu, sockets[board]);
    for (int nvSwitch : switches[board]) s.nvlinks(gpu, nvSwitch, 1, 25.0);
  }
  expectNvlinkRings(timedSearch(s.system), 16, 25.0, 6, 6);  // one per NVLink out of each GPU
}

TEST(TopologyRingSearch, OneGpuIsARingOfOne) {
  Sketch s;
  s.attach(NodeType::kGpu, s.socket(0));
  const RingSet set = search(s.system);
  ASSERT_EQ(set.rings.size(), 1u);
  EXPECT_EQ(set.rings[0], std::vector<int>{0});
  EXPECT_EQ(set.worstHop, PathType::kLoc);
  EXPECT_GT(set.bandwidthPerRing, 0);
}

TEST(TopologyRingSearch, NoGpuOrDisconnectedGpusGiveNoRing) {
  Sketch none;
  none.socket(0);
  EXPECT_TRUE(search(none.system).rings.empty());

  // Two sockets that the file does not link: no path between their GPUs.
  System apart;
  for (int numa = 0; numa < 2; ++numa) {
    Node cpu;
    cpu.type = NodeType::kCpu;
    cpu.cpuNuma = numa;
    const int index = apart.addNode(cpu);
    Node gpu;
    gpu.type = NodeType::kGpu;
    gpu.parent = index;
    apart.addLink(index, apart.addNode(gpu), LinkType::kPci, kPcieGen4);
  }
  const RingSet set = search(apart);
  EXPECT_TRUE(set.rings.empty());
  EXPECT_EQ(set.worstHop, PathType::kDis);
  EXPECT_EQ(set.bandwidthPerRing, 0);
}

TEST(TopologyRingSearch, AStepBudgetOfOneStillGivesAWholeRing) {
  Sketch s;
  const int socket0 = s.socket(0);
  const int socket1 = s.socket(1);
  for (int i = 0; i < 12; ++i) s.attach(NodeType::kGpu, i % 3 == 0 ? socket0 : socket1);
  RingSearchOptions options;
  options.stepsPerRing = 1;
  const RingSet set = searchRings(s.system, Paths(s.system), options);
  ASSERT_FALSE(set.rings.empty());
  expectVisitsEveryGpuOnce(set.rings[0], 12);
}

TEST(TopologyHostRankOrder, RanksOfOneNumaNodeAreConsecutive) {
  EXPECT_EQ(orderHostRanks({1, 0, 1, 0}), (std::vector<int>{1, 3, 0, 2}));
  EXPECT_EQ(orderHostRanks({0, 0, 0}), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(orderHostRanks({3, 1, 3, 1, 2}), (std::vector<int>{1, 3, 4, 0, 2}));
  EXPECT_EQ(orderHostRanks({}), std::vector<int>{});
}

TEST(TopologyHostRankOrder, RanksOfUnknownNumaNodeComeLast) {
  EXPECT_EQ(orderHostRanks({-1, 1, -1, 0}), (std::vector<int>{3, 1, 0, 2}));
  EXPECT_EQ(orderHostRanks({-1, -1}), (std::vector<int>{0, 1}));
}

// ---- the real machines (../shared/topologies) ----

struct RealMachine {
  const char* file;
  size_t gpus;
  PathType worstHop;
};

// DGX-2: hwloc's NVLink matrix has each GPU's links to the six NVSwitches of its own baseboard and
// none between the baseboards' switches, so the file joins its two halves through the CPUs only.
const RealMachine kRealMachines[] = {
    {"aws-p4d-24xl-a100x8-efa.xml", 8, PathType::kSys},
    {"azure-ndv2-v100x8.xml", 8, PathType::kSys},
    {"azure-ndv4-a100x8-ib.xml", 8, PathType::kSys},
    {"azure-ndv5-h100x8-ib.xml", 8, PathType::kSys},
    {"oci-bm-gpu4.8-a100x8.xml", 8, PathType::kNvl},
    {"oci-bm-gpu-h100.8.xml", 8, PathType::kNvl},
    {"panlichen-rtx3090x8-pcie.xml", 8, PathType::kSys},
    {"modal-b200x8-vm.xml", 8, PathType::kNvl},
    {"hwloc-nvidia-dgx2-v100x16.xml", 16, PathType::kSys},
    {"hwloc-hp-sl390s-tesla-x3-ib.xml", 3, PathType::kSys},
    {"hwloc-penguin-relion-p100x2-ib.xml", 2, PathType::kPix},
    {"hwloc-aws-g4dn-metal-t4x8.xml", 8, PathType::kSys},
    {"hwloc-llnl-lassen-power9-v100x4-ib.xml", 4, PathType::kSys},
};

void PrintTo(const RealMachine& machine, std::ostream* out) { *out << machine.file; }

class RingSearchOnRealMachine : public testing::TestWithParam<RealMachine> {
 protected:
  void SetUp() override {
    const fs::path path = fs::path(__FILE__).parent_path() / "../../../shared/topologies" / GetParam().file;
    if (!fs::exists(path)) {
      GTEST_SKIP() << path.string() << " is absent: the real topology files live beside the project's "
                   << "clone (../shared/topologies), as in CI";
    }
    std::ifstream file(path);
    std::string head(512, '\0');
    file.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<size_t>(file.gcount()));
    const Status status = looksLikeHwlocXml(head) ? readHwlocXmlFile(path.string(), &system_)
                                                  : readNcclTopologyFile(path.string(), &system_);
    ASSERT_TRUE(status.isOk()) << status.message();
  }
  System system_;
};

TEST_P(RingSearchOnRealMachine, RingsVisitEveryGpuOnceAndCrossSocketsAsLittleAsPossible) {
  const RealMachine& machine = GetParam();
  const RingSet set = timedSearch(system_);
  ASSERT_FALSE(set.rings.empty());
  EXPECT_EQ(set.worstHop, machine.worstHop);
  EXPECT_GT(set.bandwidthPerRing, 0);
  std::set<int> numaNodes;
  for (int gpu : system_.nodesOfType(NodeType::kGpu)) numaNodes.insert(system_.node(gpu).cpuNuma);
  for (const std::vector<int>& ring : set.rings) {
    expectVisitsEveryGpuOnce(ring, machine.gpus);
    // Where hops between sockets are the worst ones, the ring enters each NUMA node once: a
    // 2-socket machine is crossed exactly twice.
    if (set.worstHop == PathType::kSys && numaNodes.size() > 1) {
      EXPECT_EQ(numaCrossings(system_, ring), static_cast<int>(numaNodes.size()));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(SharedTopologies, RingSearchOnRealMachine, testing::ValuesIn(kRealMachines),
                         [](const testing::TestParamInfo<RealMachine>& info) {
                           std::string name = info.param.file;
                           name = name.substr(0, name.find(".xml"));
                           std::replace_if(name.begin(), name.end(), [](char c) { return !std::isalnum(c); }, '_');
                           return name;
                         });

}  // namespace
}  // namespace weft::topology
