// Ranks on GPUs ordered along the GPU rings (topology::orderGpuRanks): a machine built by hand with
// bus ids, and the real machines of ../shared/topologies with ranks on some or all of their GPUs.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "topology/load.h"
#include "topology/search.h"

namespace weft::topology {
namespace {

namespace fs = std::filesystem;

// Two sockets, four PCIe GPUs under each, with bus ids 0000:0N:00.0 numbered alternately across
// the sockets (GPU order alone would cross between them at every hop).
System twoSocketsOfPcieGpus() {
  System system;
  int sockets[2];
  for (int numa = 0; numa < 2; ++numa) {
    Node cpu;
    cpu.type = NodeType::kCpu;
    cpu.cpu.numaId = numa;
    cpu.cpuNuma = numa;
    sockets[numa] = system.addNode(cpu);
  }
  system.addLink(sockets[0], sockets[1], LinkType::kSys, 10.0);
  for (int i = 0; i < 8; ++i) {
    Node gpu;
    gpu.type = NodeType::kGpu;
    gpu.parent = sockets[i % 2];
    gpu.cpuNuma = i % 2;
    gpu.pci = PciAttributes{};
    gpu.pci->busId = canonicalBusId("0" + std::to_string(i + 1) + ":00.0");
    system.addLink(gpu.parent, system.addNode(gpu), LinkType::kPci, 24.0);
  }
  system.setSource("a machine built by the test");
  return system;
}

std::string busIdOf(const System& system, int gpu) {
  return system.node(system.nodesOfType(NodeType::kGpu)[gpu]).pci->busId;
}

// Every rank once, and the ranks of each GPU consecutive and ascending.
void expectValidOrder(const std::vector<int>& order, const std::vector<std::string>& busIdOfRank) {
  std::vector<int> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> every(busIdOfRank.size());
  std::iota(every.begin(), every.end(), 0);
  ASSERT_EQ(sorted, every);
  for (size_t i = 0; i + 1 < order.size(); ++i) {
    if (busIdOfRank[order[i]] == busIdOfRank[order[i + 1]]) {
      EXPECT_LT(order[i], order[i + 1]);
    }
  }
  // A GPU's ranks form one run: the number of GPU changes along the order (ring closed) equals the
  // number of distinct GPUs (or 0 for one GPU).
  std::vector<std::string> distinct = busIdOfRank;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  size_t changes = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    changes += busIdOfRank[order[i]] != busIdOfRank[order[(i + 1) % order.size()]] ? 1 : 0;
  }
  EXPECT_EQ(changes, distinct.size() == 1 ? 0 : distinct.size());
}

// Hops of the order, ring closed, between ranks whose GPUs hang under different NUMA nodes.
int numaCrossings(const System& system, const std::vector<int>& order, const std::vector<std::string>& busIdOfRank) {
  int crossings = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    const int from = system.findByBusId(busIdOfRank[order[i]]);
    const int to = system.findByBusId(busIdOfRank[order[(i + 1) % order.size()]]);
    crossings += system.node(from).cpuNuma != system.node(to).cpuNuma ? 1 : 0;
  }
  return crossings;
}

TEST(TopologyGpuRankOrder, RanksFollowTheGpuRingAndCrossSocketsTwice) {
  const System system = twoSocketsOfPcieGpus();
  // Eight ranks on the eight GPUs, given in reverse bus order.
  std::vector<std::string> busIdOfRank;
  for (int gpu = 7; gpu >= 0; --gpu) busIdOfRank.push_back(busIdOf(system, gpu));
  const RankRings rings = orderGpuRanks(system, Paths(system), busIdOfRank);
  ASSERT_FALSE(rings.orders.empty()) << rings.why;
  EXPECT_TRUE(rings.why.empty());
  EXPECT_EQ(rings.worstHop, PathType::kSys);
  for (const std::vector<int>& order : rings.orders) {
    expectValidOrder(order, busIdOfRank);
    EXPECT_EQ(order.front(), 0);  // the first rank's GPU first
    EXPECT_EQ(numaCrossings(system, order, busIdOfRank), 2);
  }
}

TEST(TopologyGpuRankOrder, RanksSharingAGpuAreConsecutive) {
  const System system = twoSocketsOfPcieGpus();
  // Six ranks on three GPUs (0, 1 and 2: sockets 0, 1, 0), interleaved: 0 1 2 0 1 2.
  std::vector<std::string> busIdOfRank;
  for (int rank = 0; rank < 6; ++rank) busIdOfRank.push_back(busIdOf(system, rank % 3));
  const RankRings rings = orderGpuRanks(system, Paths(system), busIdOfRank);
  ASSERT_FALSE(rings.orders.empty()) << rings.why;
  for (const std::vector<int>& order : rings.orders) {
    expectValidOrder(order, busIdOfRank);
    EXPECT_EQ(numaCrossings(system, order, busIdOfRank), 2);
  }
  // All ranks on one GPU: one order, in rank order.
  const RankRings one = orderGpuRanks(system, Paths(system), std::vector<std::string>(4, busIdOf(system, 5)));
  ASSERT_EQ(one.orders.size(), 1u);
  EXPECT_EQ(one.orders[0], (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(one.worstHop, PathType::kLoc);
}

TEST(TopologyGpuRankOrder, AnUnknownGpuOrNoRankGivesNoOrderAndSaysWhy) {
  const System system = twoSocketsOfPcieGpus();
  const RankRings unknown = orderGpuRanks(system, Paths(system), {busIdOf(system, 0), "0000:7f:00.0"});
  EXPECT_TRUE(unknown.orders.empty());
  EXPECT_NE(unknown.why.find("0000:7f:00.0"), std::string::npos) << unknown.why;
  EXPECT_NE(unknown.why.find("a machine built by the test"), std::string::npos) << unknown.why;
  const RankRings none = orderGpuRanks(system, Paths(system), {});
  EXPECT_TRUE(none.orders.empty());
  EXPECT_FALSE(none.why.empty());
}

// ---- the real machines (../shared/topologies) ----

class RealMachineRankOrder : public ::testing::Test {
 protected:
  void load(const std::string& file) {
    const fs::path path = fs::path(__FILE__).parent_path() / "../../../shared/topologies" / file;
    if (!fs::exists(path)) {
      GTEST_SKIP() << path.string() << " is absent: the real topology files live beside the project's "
                   << "clone (../shared/topologies), as in CI";
    }
    ASSERT_TRUE(loadSystem(path.string(), &system_).isOk());
  }
  System system_;
};

TEST_F(RealMachineRankOrder, HalfAnNvSwitchServerGetsNvlinkRingsOverItsGpus) {
  load("oci-bm-gpu4.8-a100x8.xml");
  if (IsSkipped()) return;
  // Ranks on GPUs 6, 4, 2, 0 (one on each, in that rank order).
  std::vector<std::string> busIdOfRank;
  for (int gpu : {6, 4, 2, 0}) busIdOfRank.push_back(busIdOf(system_, gpu));
  const RankRings rings = orderGpuRanks(system_, Paths(system_), busIdOfRank);
  ASSERT_FALSE(rings.orders.empty()) << rings.why;
  EXPECT_EQ(rings.worstHop, PathType::kNvl);
  EXPECT_GT(rings.orders.size(), 1u);
  for (const std::vector<int>& order : rings.orders) expectValidOrder(order, busIdOfRank);
}

TEST_F(RealMachineRankOrder, PcieServerRingsCrossSocketsTwice) {
  load("hwloc-aws-g4dn-metal-t4x8.xml");
  if (IsSkipped()) return;
  // Two ranks on each of the eight T4s, ranks in an order that interleaves the sockets.
  const int gpus = static_cast<int>(system_.nodesOfType(NodeType::kGpu).size());
  ASSERT_EQ(gpus, 8);
  std::vector<std::string> busIdOfRank;
  for (int rank = 0; rank < 16; ++rank) busIdOfRank.push_back(busIdOf(system_, (rank * 5) % gpus));
  const RankRings rings = orderGpuRanks(system_, Paths(system_), busIdOfRank);
  ASSERT_FALSE(rings.orders.empty()) << rings.why;
  for (const std::vector<int>& order : rings.orders) {
    expectValidOrder(order, busIdOfRank);
    EXPECT_EQ(numaCrossings(system_, order, busIdOfRank), 2);
  }
}

}  // namespace
}  // namespace weft::topology
