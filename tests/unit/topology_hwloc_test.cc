// The hwloc detector: this machine as hwloc and sysfs show it, the real hwloc XML files of
// ../shared/topologies with their true counts, and the pieces (sysfs reading, link rates, NVML's
// NVLinks) on trees and facts the tests make themselves.

#include "topology/hwloc_detector.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <net/if.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "tests/harness/scoped_env.h"
#include "topology/hwloc_host_nics.h"
#include "topology/hwloc_nvlinks.h"
#include "topology/hwloc_pci_link.h"
#include "topology/hwloc_sysfs.h"
#include "topology/load.h"

namespace weft::topology {
namespace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// Reading Systems.

std::string firstLine(const fs::path& path) {
  std::ifstream file(path);
  std::string line;
  std::getline(file, line);
  return line;
}

int countOf(const System& system, NodeType type) { return static_cast<int>(system.nodesOfType(type).size()); }

/// The CPUs' attributes, in node order.
std::vector<CpuAttributes> cpusOf(const System& system) {
  std::vector<CpuAttributes> cpus;
  for (int index : system.nodesOfType(NodeType::kCpu)) cpus.push_back(system.node(index).cpu);
  return cpus;
}

/// Expects exactly these CPUs, in order: their NUMA ids and affinities.
void expectCpus(const System& system, const std::vector<std::pair<int, std::string>>& numaAndAffinity) {
  const std::vector<CpuAttributes> cpus = cpusOf(system);
  ASSERT_EQ(cpus.size(), numaAndAffinity.size());
  for (size_t i = 0; i < cpus.size(); ++i) {
    EXPECT_EQ(cpus[i].numaId, numaAndAffinity[i].first);
    EXPECT_EQ(cpus[i].affinity, numaAndAffinity[i].second);
  }
}

/// The NIC node with a port named `name`; -1 when none has it.
int nicWithPort(const System& system, const std::string& name) {
  for (int index : system.nodesOfType(NodeType::kNic)) {
    for (const NetPort& port : system.node(index).nic.ports) {
      if (port.name == name) return index;
    }
  }
  return -1;
}

/// The node with bus id `busId`; fails the test when there is none.
const Node& nodeAt(const System& system, const std::string& busId) {
  const int index = system.findByBusId(busId);
  EXPECT_GE(index, 0) << "no node has bus id " << busId;
  static const Node kMissing;
  return index >= 0 ? system.node(index) : kMissing;
}

/// The bus id of the parent of the node at `busId` ("CPU <numa>" when it is a CPU).
std::string parentOf(const System& system, const std::string& busId) {
  const Node& node = nodeAt(system, busId);
  if (node.parent < 0) return "none";
  const Node& parent = system.node(node.parent);
  if (parent.type == NodeType::kCpu) return "CPU " + std::to_string(parent.cpu.numaId);
  return parent.pci.has_value() ? parent.pci->busId : "?";
}

/// Expects each node of the table (by bus id) below the node it names (a bus id, or "CPU <numa>").
void expectParents(const System& system, const std::vector<std::pair<std::string, std::string>>& childAndParent) {
  for (const auto& [child, parent] : childAndParent) EXPECT_EQ(parentOf(system, child), parent) << child;
}

/// The links from `from` of `type`.
std::vector<Link> linksOf(const System& system, int from, LinkType type) {
  std::vector<Link> found;
  for (int link : system.linksFrom(from)) {
    if (system.links()[link].type == type) found.push_back(system.links()[link]);
  }
  return found;
}

/// Every node below a parent is linked to it with kPci in both directions; CPUs are linked to
/// each other with kSys.
void expectTreeLinks(const System& system) {
  for (const Node& node : system.nodes()) {
    if (node.parent < 0) continue;
    bool up = false;
    bool down = false;
    for (const Link& link : linksOf(system, node.index, LinkType::kPci)) up |= link.to == node.parent;
    for (const Link& link : linksOf(system, node.parent, LinkType::kPci)) down |= link.to == node.index;
    EXPECT_TRUE(up && down) << nodeTypeName(node.type) << " node " << node.index << " is not linked to its parent";
  }
  const int cpus = countOf(system, NodeType::kCpu);
  int sysLinks = 0;
  for (const Link& link : system.links()) sysLinks += link.type == LinkType::kSys;
  EXPECT_EQ(sysLinks, cpus * (cpus - 1));
}

// ---------------------------------------------------------------------------------------------
// This machine.

/// The NUMA nodes of /sys/devices/system/node that have CPUs.
std::set<int> numaNodesWithCpus() {
  std::set<int> nodes;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator("/sys/devices/system/node", error)) {
    const std::string name = entry.path().filename().string();
    const bool numbered = name.size() > 4 && name.find_first_not_of("0123456789", 4) == std::string::npos;
    if (name.rfind("node", 0) != 0 || !numbered) continue;
    if (!firstLine(entry.path() / "cpulist").empty()) nodes.insert(std::stoi(name.substr(4)));
  }
  return nodes;
}

/// NVIDIA display and 3D controllers in /sys/bus/pci/devices.
int nvidiaGpusInSysfs() {
  int gpus = 0;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator("/sys/bus/pci/devices", error)) {
    const unsigned long vendor = std::strtoul(firstLine(entry.path() / "vendor").c_str(), nullptr, 16);
    const unsigned long classCode = std::strtoul(firstLine(entry.path() / "class").c_str(), nullptr, 16);
    if (vendor == 0x10de && ((classCode >> 8) == 0x0300 || (classCode >> 8) == 0x0302)) ++gpus;
  }
  return gpus;
}

class HwlocDetection : public ::testing::Test {
 protected:
  void SetUp() override {
    const Status status = detectSystem(&system_);
    ASSERT_TRUE(status.isOk()) << status.message();
  }
  System system_;
};

TEST_F(HwlocDetection, HasACpuPerNumaNodeWithCpus) {
  const std::set<int> expected = numaNodesWithCpus();
  ASSERT_FALSE(expected.empty());
  std::set<int> found;
  for (int index : system_.nodesOfType(NodeType::kCpu)) {
    const CpuAttributes& cpu = system_.node(index).cpu;
    found.insert(cpu.numaId);
    EXPECT_FALSE(cpu.arch.empty());
    // Comma-separated 32-bit words in hexadecimal, with at least one CPU.
    EXPECT_FALSE(cpu.affinity.empty());
    EXPECT_EQ(cpu.affinity.find_first_not_of("0123456789abcdef,"), std::string::npos) << cpu.affinity;
    EXPECT_NE(cpu.affinity.find_first_not_of("0,"), std::string::npos) << cpu.affinity;
  }
  EXPECT_EQ(found, expected);
  expectTreeLinks(system_);
}

// An interface that is down is left out unless hwloc places it on a PCI NIC (a spare port).
TEST_F(HwlocDetection, EveryNetworkInterfaceButLoopbackAndVirtualOnesThatAreDownIsANicPort) {
  int interfaces = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator("/sys/class/net")) {
    const std::string name = entry.path().filename().string();
    if (firstLine(entry.path() / "type") == "772") {
      EXPECT_LT(nicWithPort(system_, name), 0) << "loopback " << name << " is a NIC port";
      continue;
    }
    if ((std::stoul(firstLine(entry.path() / "flags"), nullptr, 16) & IFF_UP) == 0) {
      if (!fs::exists(entry.path() / "device")) {
        EXPECT_LT(nicWithPort(system_, name), 0) << name << " is down";
      }
      continue;
    }
    ++interfaces;
    EXPECT_GE(nicWithPort(system_, name), 0) << name << " is missing";
  }
  EXPECT_GT(interfaces, 0);
}

TEST_F(HwlocDetection, GpusAreTheNvidiaDisplayDevices) {
  EXPECT_EQ(countOf(system_, NodeType::kGpu), nvidiaGpusInSysfs());
}

TEST_F(HwlocDetection, NamesItsSourceAndWhetherNvmlDescribedNvlinks) {
  EXPECT_EQ(system_.source(), "hwloc detection");
  void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (nvml == nullptr) {
    EXPECT_FALSE(system_.nvlinkDescribed());
  } else {
    dlclose(nvml);
  }
}

TEST(HwlocDetectionQuietly, PrintsNothingAndLoadsNoHwlocPlugin) {
  System system;
  ::testing::internal::CaptureStderr();
  ::testing::internal::CaptureStdout();
  const Status status = detectSystem(&system);
  const std::string printedOut = ::testing::internal::GetCapturedStdout();
  const std::string printedErr = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_EQ(printedOut, "");
  EXPECT_EQ(printedErr, "");
  // hwloc's plugins (hwloc_pci.so, ...) and a shared libhwloc stay out of the process.
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    EXPECT_EQ(line.find("/hwloc/hwloc_"), std::string::npos) << line;
    EXPECT_EQ(line.find("libhwloc.so"), std::string::npos) << line;
  }
}

// ---------------------------------------------------------------------------------------------
// The real hwloc files.

class HwlocRealFile : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = fs::path(__FILE__).parent_path() / "../../../shared/topologies";
    if (!fs::is_directory(folder_)) {
      GTEST_SKIP() << folder_.string() << " is absent: the real topology files live beside the project's "
                   << "checkout (../shared/topologies), as in CI";
    }
  }

  /// Reads `name` from the folder; fails the test when it does not load.
  System load(const std::string& name) {
    System system;
    const std::string path = (folder_ / name).string();
    const Status status = readHwlocXmlFile(path, &system);
    EXPECT_TRUE(status.isOk()) << status.message();
    EXPECT_EQ(system.source(), "hwloc XML file " + path);
    expectTreeLinks(system);
    return system;
  }

  fs::path folder_;
};

TEST_F(HwlocRealFile, NvidiaDgx2Has16V100sAnd12NvSwitchesLinkedByItsMatrix) {
  const System system = load("hwloc-nvidia-dgx2-v100x16.xml");
  expectCpus(system, {{0, "00000003"}, {1, "03000000"}});
  const CpuAttributes cpu0 = cpusOf(system).at(0);
  EXPECT_EQ(cpu0.arch, "x86_64");
  EXPECT_EQ(cpu0.vendor, "GenuineIntel");
  EXPECT_EQ(cpu0.familyId, 6);
  EXPECT_EQ(cpu0.modelId, 85);
  EXPECT_EQ(countOf(system, NodeType::kNic), 0);

  const std::vector<int> gpus = system.nodesOfType(NodeType::kGpu);
  ASSERT_EQ(gpus.size(), 16u);
  for (size_t dev = 0; dev < gpus.size(); ++dev) {
    const Node& gpu = system.node(gpus[dev]);
    EXPECT_EQ(gpu.gpu.dev, static_cast<int>(dev));  // from the nvml<N> OS devices, in node order
    EXPECT_EQ(gpu.pci->vendor, 0x10de);
    EXPECT_EQ(gpu.pci->device, 0x1db8);
    EXPECT_EQ(gpu.cpuNuma, dev < 8 ? 0 : 1);
  }
  EXPECT_EQ(system.node(gpus[0]).pci->busId, "0000:34:00.0");
  // Two GPUs per last-level switch, four per first-level switch, as the PCI tree nests.
  expectParents(system, {{"0000:34:00.0", "0000:32:00.0"},
                         {"0000:36:00.0", "0000:32:00.0"},
                         {"0000:39:00.0", "0000:37:00.0"},
                         {"0000:32:00.0", "0000:2c:00.0"},
                         {"0000:37:00.0", "0000:2c:00.0"},
                         {"0000:2c:00.0", "CPU 0"},
                         {"0000:b7:00.0", "0000:b5:00.0"}});
  // Gen3 x16, 12 GB/s as NCCL counts it.
  EXPECT_EQ(system.node(gpus[0]).pci->linkSpeedGts, 8.0);
  EXPECT_EQ(system.node(gpus[0]).pci->linkWidth, 16);
  const std::vector<Link> up = linksOf(system, gpus[0], LinkType::kPci);
  ASSERT_EQ(up.size(), 1u);
  EXPECT_DOUBLE_EQ(up[0].bandwidth, 12.0);

  // 12 NVSwitches, one of which the file gives class 0: hwloc's subtype names it.
  const std::vector<int> nvSwitches = system.nodesOfType(NodeType::kNvSwitch);
  ASSERT_EQ(nvSwitches.size(), 12u);
  EXPECT_EQ(nodeAt(system, "0000:66:00.0").type, NodeType::kNvSwitch);
  // Each GPU has one NVLink to each of the six NVSwitches of its baseboard, 25 GB/s each way.
  EXPECT_TRUE(system.nvlinkDescribed());
  int nvlinks = 0;
  for (const Link& link : system.links()) {
    if (link.type != LinkType::kNvLink) continue;
    ++nvlinks;
    EXPECT_DOUBLE_EQ(link.bandwidth, 25.0);
    EXPECT_EQ(link.count, 1);
  }
  EXPECT_EQ(nvlinks, 16 * 6 * 2);
  for (size_t dev = 0; dev < gpus.size(); ++dev) {
    const std::vector<Link> links = linksOf(system, gpus[dev], LinkType::kNvLink);
    ASSERT_EQ(links.size(), 6u);
    for (const Link& link : links) {
      const Node& nvSwitch = system.node(link.to);
      EXPECT_EQ(nvSwitch.type, NodeType::kNvSwitch);
      // Baseboard 1 switches sit on buses 0x61-0x67 (socket 0), baseboard 2 on 0xc1-0xc7.
      EXPECT_EQ(nvSwitch.pci->busId.substr(5, 1), dev < 8 ? "6" : "c") << nvSwitch.pci->busId;
    }
  }
}

TEST_F(HwlocRealFile, HpSl390sHas3TeslasAndAConnectX2ButNotItsBoardVga) {
  const System system = load("hwloc-hp-sl390s-tesla-x3-ib.xml");
  expectCpus(system, {{0, "00555555"}, {1, "00aaaaaa"}});

  const std::vector<int> gpus = system.nodesOfType(NodeType::kGpu);
  ASSERT_EQ(gpus.size(), 3u);
  // No OS devices: numbered in bus-id order.
  EXPECT_EQ(system.node(gpus[0]).pci->busId, "0000:06:00.0");
  EXPECT_EQ(system.node(gpus[1]).pci->busId, "0000:11:00.0");
  EXPECT_EQ(system.node(gpus[2]).pci->busId, "0000:14:00.0");
  for (int dev = 0; dev < 3; ++dev) EXPECT_EQ(system.node(gpus[dev]).gpu.dev, dev);
  expectParents(system, {{"0000:06:00.0", "CPU 0"},
                         {"0000:11:00.0", "CPU 1"},
                         {"0000:14:00.0", "CPU 1"}});
  EXPECT_EQ(system.findByBusId("0000:01:03.0"), -1) << "the ATI ES1000 board VGA is not a GPU";

  // Two 82576 ports and the ConnectX-2, whose class is InfiniBand's old serial-bus one.
  EXPECT_EQ(countOf(system, NodeType::kNic), 3);
  const int connectX2 = nicWithPort(system, "mlx4_0");
  ASSERT_GE(connectX2, 0);
  EXPECT_EQ(system.node(connectX2).pci->busId, "0000:05:00.0");
  EXPECT_EQ(system.node(connectX2).pci->classCode, 0x0c0600u);
  EXPECT_EQ(nicWithPort(system, "ib0"), connectX2);
  EXPECT_EQ(nicWithPort(system, "eth2"), connectX2);
  EXPECT_EQ(parentOf(system, "0000:05:00.0"), "CPU 0");
  EXPECT_GE(nicWithPort(system, "eth0"), 0);
  EXPECT_FALSE(system.nvlinkDescribed());
}

TEST_F(HwlocRealFile, PenguinRelionHasTwoP100sAndAConnectX5UnderOneSwitch) {
  const System system = load("hwloc-penguin-relion-p100x2-ib.xml");
  expectCpus(system, {{0, "00000000,003ffff0,0003ffff"}, {1, "000000ff,ffc0000f,fffc0000"}});
  EXPECT_EQ(cpusOf(system).at(0).modelId, 79);

  const std::vector<int> gpus = system.nodesOfType(NodeType::kGpu);
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(system.node(gpus[0]).pci->busId, "0000:04:00.0");
  EXPECT_EQ(system.node(gpus[1]).pci->busId, "0000:07:00.0");
  EXPECT_EQ(system.node(gpus[1]).gpu.dev, 1);  // cuda1

  const int connectX5 = nicWithPort(system, "mlx5_0");
  ASSERT_GE(connectX5, 0);
  EXPECT_EQ(system.node(connectX5).pci->busId, "0000:08:00.0");
  EXPECT_EQ(nicWithPort(system, "hsi0"), connectX5);
  const std::vector<NetPort>& ports = system.node(connectX5).nic.ports;
  const auto ib = std::find_if(ports.begin(), ports.end(), [](const NetPort& port) { return port.name == "mlx5_0"; });
  ASSERT_NE(ib, ports.end());
  EXPECT_EQ(ib->port, 1);
  EXPECT_EQ(ib->guid, 0xec0d9a030067fdd4u);
  EXPECT_EQ(ib->speedMbps, 0);  // not in hwloc files

  // One PLX switch holds both GPUs and the NIC; it hangs from socket 0.
  expectParents(system, {{"0000:04:00.0", "0000:02:00.0"},
                         {"0000:07:00.0", "0000:02:00.0"},
                         {"0000:08:00.0", "0000:02:00.0"},
                         {"0000:02:00.0", "CPU 0"}});
  EXPECT_EQ(countOf(system, NodeType::kPciSwitch), 1);
  // Plus the two i350 ports; the ASPEED VGA is no GPU.
  EXPECT_EQ(countOf(system, NodeType::kNic), 3);
  EXPECT_EQ(system.findByBusId("0000:0b:00.0"), -1);
}

TEST_F(HwlocRealFile, WeftHwlocXmlDescribesTheMachineWhereNcclTopoFileIsUnset) {
  const std::string penguin = (folder_ / "hwloc-penguin-relion-p100x2-ib.xml").string();
  const harness::ScopedEnv env({{"NCCL_TOPO_FILE", std::nullopt}, {"WEFT_HWLOC_XML", penguin}});
  ASSERT_EQ(configuredTopologyFile(), penguin);
  System system;
  ASSERT_TRUE(loadSystem(configuredTopologyFile(), &system).isOk());
  EXPECT_EQ(system.source(), "hwloc XML file " + penguin);
  EXPECT_EQ(countOf(system, NodeType::kGpu), 2);

  const std::string nccl = (folder_ / "oci-bm-gpu-h100.8.xml").string();
  const harness::ScopedEnv ncclFileWins("NCCL_TOPO_FILE", nccl.c_str());
  EXPECT_EQ(configuredTopologyFile(), nccl);
}

TEST_F(HwlocRealFile, HwlocsOwnXmlFileAddsNothingOfThisMachine) {
  const std::string penguin = (folder_ / "hwloc-penguin-relion-p100x2-ib.xml").string();
  const harness::ScopedEnv env("HWLOC_XMLFILE", penguin.c_str());
  System system;
  ASSERT_TRUE(detectSystem(&system).isOk());
  EXPECT_EQ(system.source(), "hwloc detection of another machine (HWLOC_XMLFILE)");
  EXPECT_EQ(countOf(system, NodeType::kGpu), 2);
  EXPECT_EQ(countOf(system, NodeType::kNic), 3) << "the file's NICs, none of this machine's";
}

TEST_F(HwlocRealFile, AwsG4dnMetalHasEightT4sAndEfaOnSocket1) {
  const System system = load("hwloc-aws-g4dn-metal-t4x8.xml");
  ASSERT_EQ(countOf(system, NodeType::kCpu), 2);
  const std::vector<int> gpus = system.nodesOfType(NodeType::kGpu);
  ASSERT_EQ(gpus.size(), 8u);
  for (size_t dev = 0; dev < gpus.size(); ++dev) {
    const Node& gpu = system.node(gpus[dev]);
    EXPECT_EQ(gpu.gpu.dev, static_cast<int>(dev));
    EXPECT_EQ(gpu.pci->device, 0x1eb8);  // Tesla T4
    EXPECT_EQ(gpu.cpuNuma, dev < 4 ? 0 : 1);
    // Each T4 is alone behind a root port: no switch between it and its CPU.
    EXPECT_EQ(system.node(gpu.parent).type, NodeType::kCpu);
  }
  const int efa = nicWithPort(system, "rdmap197s0");
  ASSERT_GE(efa, 0);
  EXPECT_EQ(system.node(efa).cpuNuma, 1);
  EXPECT_EQ(system.node(efa).pci->device, 0xefa0);
  expectParents(system, {{"0000:c5:00.0", "0000:c3:00.0"},
                         {"0000:c6:00.0", "0000:c3:00.0"},  // the ENA, eth0
                         {"0000:c3:00.0", "CPU 1"}});
  EXPECT_EQ(countOf(system, NodeType::kNic), 2);
  EXPECT_FALSE(system.nvlinkDescribed());
}

TEST_F(HwlocRealFile, LlnlLassenHasFourV100sAndTwoDualPortConnectX5s) {
  const System system = load("hwloc-llnl-lassen-power9-v100x4-ib.xml");
  // 176 CPUs: six words; the first eight CPUs are not allowed in this file.
  expectCpus(system, {{0, "00000000,00000000,00000000,00ffffff,ffffffff,ffffff00"},
                      {8, "0000ffff,ffffffff,ffffffff,00000000,00000000,00000000"}});
  EXPECT_EQ(cpusOf(system).at(0).arch, "ppc64");

  const std::vector<int> gpus = system.nodesOfType(NodeType::kGpu);
  ASSERT_EQ(gpus.size(), 4u);
  expectParents(system, {{"0004:04:00.0", "0004:01:00.0"},
                         {"0004:05:00.0", "0004:01:00.0"},
                         {"0035:03:00.0", "0035:01:00.0"},
                         {"0035:04:00.0", "0035:01:00.0"},
                         {"0004:01:00.0", "CPU 0"},
                         {"0035:01:00.0", "CPU 8"}});

  // Two ConnectX-5 functions per socket, one port each, one system image GUID for all four.
  for (const char* name : {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"}) {
    const int nic = nicWithPort(system, name);
    ASSERT_GE(nic, 0) << name;
    const bool socket0 = std::string(name) < "mlx5_2";
    EXPECT_EQ(system.node(nic).cpuNuma, socket0 ? 0 : 8) << name;
    EXPECT_EQ(system.node(nic).pci->device, 0x1019);
    for (const NetPort& port : system.node(nic).nic.ports) {
      if (port.name == name) {
        EXPECT_EQ(port.guid, 0x506b4b03003ceee8u);
      }
    }
  }
  EXPECT_EQ(countOf(system, NodeType::kNic), 6);  // and the two Broadcom ports
  EXPECT_EQ(system.findByBusId("0002:02:00.0"), -1) << "the ASPEED VGA is not a GPU";
  EXPECT_FALSE(system.nvlinkDescribed());
}

// ---------------------------------------------------------------------------------------------
// Files that are not what they should be.

class HwlocXmlErrors : public ::testing::Test {
 protected:
  fs::path write(const std::string& name, const std::string& text) {
    const fs::path path = fs::temp_directory_path() / ("weft_hwloc_test_" + std::to_string(getpid()) + "_" + name);
    std::ofstream(path) << text;
    written_.push_back(path);
    return path;
  }
  void TearDown() override {
    for (const fs::path& path : written_) fs::remove(path);
  }

  /// Reads `path`, expects kInvalidArgument naming the file, and that `out` was left alone.
  std::string expectFailure(const fs::path& path) {
    System system;
    system.addNode(Node{});
    const Status status = readHwlocXmlFile(path.string(), &system);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(status.message().find(path.string()), std::string::npos) << status.message();
    EXPECT_EQ(system.nodes().size(), 1u);
    return status.message();
  }

  std::vector<fs::path> written_;
};

TEST_F(HwlocXmlErrors, MissingFileSaysItCannotBeRead) {
  const std::string message = expectFailure("/nonexistent/weft/topology.xml");
  EXPECT_NE(message.find("cannot be read"), std::string::npos) << message;
}

TEST_F(HwlocXmlErrors, GarbageIsNotHwlocXml) {
  const std::string message = expectFailure(write("garbage.xml", "\x01\x02 this is not XML at all"));
  EXPECT_NE(message.find("not an hwloc XML file"), std::string::npos) << message;
}

TEST_F(HwlocXmlErrors, NcclTopologyFileIsRecognised) {
  const std::string message =
      expectFailure(write("nccl.xml", "<system version=\"1\">\n  <cpu numaid=\"0\"/>\n</system>\n"));
  EXPECT_NE(message.find("NCCL topology"), std::string::npos) << message;
}

TEST_F(HwlocXmlErrors, XmlThatIsNotWellFormedSaysWhere) {
  const std::string message = expectFailure(
      write("broken.xml", "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n  <object type=\"Machine\""));
  EXPECT_NE(message.find("broken.xml, line 3: not well-formed XML"), std::string::npos) << message;
}

TEST_F(HwlocXmlErrors, APciObjectWithoutABusIdSaysWhere) {
  const std::string message = expectFailure(write("busid.xml",
                                                  "<topology version=\"2.0\">\n"
                                                  "  <object type=\"Machine\" os_index=\"0\">\n"
                                                  "    <object type=\"PCIDev\" pci_busid=\"garbage\"/>\n"
                                                  "  </object>\n"
                                                  "</topology>\n"));
  EXPECT_NE(message.find("busid.xml, line 3: <object> attribute pci_busid=\"garbage\" is not a PCI bus id"),
            std::string::npos)
      << message;
}

TEST_F(HwlocXmlErrors, XmlThatHwlocRejectsSaysWhatHwlocSaid) {
  const std::string message =
      expectFailure(write("rejected.xml", "<topology version=\"2.0\">\n  <object type=\"Banana\"/>\n</topology>\n"));
  EXPECT_NE(message.find("hwloc could not load"), std::string::npos) << message;
}

TEST(HwlocXmlRecognition, LooksAtTheRootElement) {
  EXPECT_TRUE(looksLikeHwlocXml("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                                "<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
                                "<topology version=\"2.0\">"));
  EXPECT_TRUE(looksLikeHwlocXml("\xEF\xBB\xBF<!-- lstopo -->\n<topology>"));
  EXPECT_TRUE(looksLikeHwlocXml("<!DOCTYPE topology [ <!ELEMENT topology ANY> ]><topology/>"));
  EXPECT_TRUE(looksLikeHwlocXml("  <topology"));
  EXPECT_FALSE(looksLikeHwlocXml("<system version=\"1\">"));
  EXPECT_FALSE(looksLikeHwlocXml("<topologyx>"));
  EXPECT_FALSE(looksLikeHwlocXml("<!-- a comment cut sh"));
  EXPECT_FALSE(looksLikeHwlocXml(""));
  EXPECT_FALSE(looksLikeHwlocXml("topology"));
}

// ---------------------------------------------------------------------------------------------
// Link rates.

TEST(HwlocPciLink, ReadsHwlocLinkSpeeds) {
  struct Case {
    double gigabytesPerSecond;
    double speedGts;
    int width;
  };
  for (const Case& c : {Case{15.753846, 8, 16}, Case{7.876923, 8, 8}, Case{3.938462, 8, 4}, Case{1.969231, 8, 2},
                        Case{31.507692, 16, 16}, Case{63.015385, 32, 16}, Case{121.0, 64, 16}, Case{4.0, 2.5, 16},
                        Case{1.0, 2.5, 4}, Case{0.25, 2.5, 1}, Case{0, 0, 0}, Case{0.2, 0, 0}, Case{-1, 0, 0}}) {
    const PciLink link = pciLinkFromHwlocSpeed(c.gigabytesPerSecond);
    EXPECT_EQ(link.speedGts, c.speedGts) << c.gigabytesPerSecond;
    EXPECT_EQ(link.width, c.width) << c.gigabytesPerSecond;
  }
}

TEST(HwlocSysfsText, ReadsLinkSpeedsAndPortRates) {
  EXPECT_EQ(parseLinkSpeedGts("8.0 GT/s PCIe"), 8.0);
  EXPECT_EQ(parseLinkSpeedGts("2.5 GT/s"), 2.5);
  EXPECT_EQ(parseLinkSpeedGts("Unknown"), 0);
  EXPECT_EQ(parseLinkSpeedGts(""), 0);
  EXPECT_EQ(parseInfinibandRateMbps("100 Gb/sec (4X EDR)"), 100000);
  EXPECT_EQ(parseInfinibandRateMbps("2.5 Gb/sec (1X SDR)"), 2500);
  EXPECT_EQ(parseInfinibandRateMbps("400 Gb/sec (4X NDR)"), 400000);
  EXPECT_EQ(parseInfinibandRateMbps("fast"), 0);
  EXPECT_EQ(parseInfinibandRateMbps(""), 0);
}

// ---------------------------------------------------------------------------------------------
// A sysfs tree of the test's own: a virtio NIC (eth0), a virtual interface (ifb0; its flags file
// unreadable), one that is down (ifb1), loopback, an
// InfiniBand device with two ports, and an IBM NPU (POWER9's NVLink bridge).

class HwlocFakeSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("weft_hwloc_sysfs_" + std::to_string(getpid()));
    fs::remove_all(root_);
    const std::string nic = "devices/pci0000:00/0000:00:03.0";
    write(nic + "/class", "0x020000");
    write(nic + "/vendor", "0x1af4");
    write(nic + "/numa_node", "1");
    write(nic + "/current_link_speed", "8.0 GT/s PCIe");
    write(nic + "/current_link_width", "16");
    write(nic + "/virtio2/net/eth0/type", "1");
    write(nic + "/virtio2/net/eth0/speed", "25000");
    write(nic + "/virtio2/net/eth0/flags", "0x1003");
    link(nic + "/driver", "../../../bus/pci/drivers/virtio-pci");
    link("bus/pci/devices/0000:00:03.0", "../../../" + nic);
    link("class/net/eth0", "../../" + nic + "/virtio2/net/eth0");
    write("devices/virtual/net/ifb0/type", "1");
    link("class/net/ifb0", "../../devices/virtual/net/ifb0");
    write("devices/virtual/net/ifb1/type", "1");
    write("devices/virtual/net/ifb1/flags", "0x82");  // down
    link("class/net/ifb1", "../../devices/virtual/net/ifb1");
    write("devices/virtual/net/lo/type", "772");
    link("class/net/lo", "../../devices/virtual/net/lo");
    write("class/infiniband/mlx5_0/ports/1/rate", "100 Gb/sec (4X EDR)");
    write("class/infiniband/mlx5_0/ports/2/rate", "25 Gb/sec (1X EDR)");
    write("bus/pci/devices/0000:0a:00.0/vendor", "0x1014");
    write("bus/pci/devices/0000:0a:00.0/class", "0x068000");
  }
  void TearDown() override { fs::remove_all(root_); }

  void write(const std::string& relative, const std::string& text) {
    fs::create_directories((root_ / relative).parent_path());
    std::ofstream(root_ / relative) << text << "\n";
  }
  void link(const std::string& relative, const std::string& target) {
    fs::create_directories((root_ / relative).parent_path());
    fs::create_symlink(target, root_ / relative);
  }

  /// Two CPUs (NUMA 0 and 1), and a NIC node for the virtio function with no port yet.
  static System twoCpusAndVirtioNic() {
    System system;
    for (int numa : {0, 1}) {
      Node cpu;
      cpu.type = NodeType::kCpu;
      cpu.cpu.numaId = numa;
      cpu.cpuNuma = numa;
      system.addNode(cpu);
    }
    system.addLink(0, 1, LinkType::kSys, 10.0);
    Node nic;
    nic.type = NodeType::kNic;
    nic.parent = 1;
    nic.cpuNuma = 1;
    nic.pci = PciAttributes{};
    nic.pci->busId = "0000:00:03.0";
    const int index = system.addNode(nic);
    system.addLink(index, 1, LinkType::kPci, 12.0);
    return system;
  }

  fs::path root_;
};

TEST_F(HwlocFakeSysfs, ReadsPciFunctionsInterfacesAndPorts) {
  const Sysfs sysfs(root_.string());
  const SysfsPciFunction function = sysfs.pciFunction("0000:00:03.0");
  EXPECT_EQ(function.classCode, 0x020000u);
  EXPECT_EQ(function.vendor, 0x1af4);
  EXPECT_EQ(function.linkSpeedGts, 8.0);
  EXPECT_EQ(function.linkWidth, 16);
  EXPECT_EQ(function.driver, "virtio-pci");
  EXPECT_EQ(function.numaNode, 1);
  const SysfsPciFunction absent = sysfs.pciFunction("0000:ff:00.0");
  EXPECT_EQ(absent.classCode, 0u);
  EXPECT_EQ(absent.numaNode, -1);

  const std::vector<SysfsNetInterface> interfaces = sysfs.netInterfaces();
  ASSERT_EQ(interfaces.size(), 2u);  // not lo, nor ifb1, which is down
  EXPECT_EQ(interfaces[0].name, "eth0");
  EXPECT_EQ(interfaces[0].busId, "0000:00:03.0");
  EXPECT_EQ(interfaces[0].numaNode, 1);
  EXPECT_EQ(interfaces[1].name, "ifb0");
  EXPECT_EQ(interfaces[1].busId, "");
  EXPECT_EQ(interfaces[1].numaNode, -1);
  EXPECT_EQ(sysfs.netSpeedMbps("eth0"), 25000);
  EXPECT_EQ(sysfs.netSpeedMbps("ifb0"), 0);

  const std::vector<SysfsInfinibandPort> ports = sysfs.infinibandPorts("mlx5_0");
  ASSERT_EQ(ports.size(), 2u);
  EXPECT_EQ(ports[0].port, 1);
  EXPECT_EQ(ports[0].rateMbps, 100000);
  EXPECT_EQ(ports[1].port, 2);
  EXPECT_EQ(ports[1].rateMbps, 25000);
  EXPECT_TRUE(sysfs.infinibandPorts("mlx5_9").empty());
}

TEST_F(HwlocFakeSysfs, HostInterfacesJoinTheirPciNicOrStandAlone) {
  const Sysfs sysfs(root_.string());
  System system = twoCpusAndVirtioNic();
  addHostNetInterfaces(sysfs, &system);
  addHostNetInterfaces(sysfs, &system);  // a second pass adds nothing

  const int virtio = system.findByBusId("0000:00:03.0");
  ASSERT_EQ(system.node(virtio).nic.ports.size(), 1u);
  EXPECT_EQ(system.node(virtio).nic.ports[0].name, "eth0");
  EXPECT_EQ(system.node(virtio).nic.ports[0].speedMbps, 25000);

  ASSERT_EQ(countOf(system, NodeType::kNic), 2);
  const int ifb = nicWithPort(system, "ifb0");
  ASSERT_GE(ifb, 0);
  EXPECT_FALSE(system.node(ifb).pci.has_value());
  EXPECT_EQ(system.node(ifb).parent, 0);  // NUMA unknown: the first CPU
  EXPECT_EQ(system.node(ifb).cpuNuma, 0);
  const std::vector<Link> up = linksOf(system, ifb, LinkType::kPci);
  ASSERT_EQ(up.size(), 1u);
  EXPECT_EQ(up[0].bandwidth, kCpuAttachedNicBandwidth);
  EXPECT_LT(nicWithPort(system, "lo"), 0);
  EXPECT_LT(nicWithPort(system, "ifb1"), 0);  // down
  expectTreeLinks(system);
}

// ---------------------------------------------------------------------------------------------
// NVML's facts, as a live machine would give them.

/// CPU 0 (NUMA 0), GPUs A (0000:04:00.0) and B (0000:07:00.0) below it, and one NVSwitch that
/// hwloc saw (0000:61:00.0).
System twoGpusAndAnNvSwitch() {
  System system;
  Node cpu;
  cpu.type = NodeType::kCpu;
  cpu.cpu.numaId = 0;
  cpu.cpuNuma = 0;
  system.addNode(cpu);
  for (const char* busId : {"0000:04:00.0", "0000:07:00.0"}) {
    Node gpu;
    gpu.type = NodeType::kGpu;
    gpu.parent = 0;
    gpu.cpuNuma = 0;
    gpu.pci = PciAttributes{};
    gpu.pci->busId = busId;
    system.addLink(system.addNode(gpu), 0, LinkType::kPci, 12.0);
  }
  Node nvSwitch;
  nvSwitch.type = NodeType::kNvSwitch;
  nvSwitch.pci = PciAttributes{};
  nvSwitch.pci->busId = "0000:61:00.0";
  system.addNode(nvSwitch);
  return system;
}

/// The one NVLink link from `from` to `to`; fails the test when there is not exactly one.
Link onlyLink(const System& system, int from, int to) {
  std::vector<Link> found;
  for (const Link& link : linksOf(system, from, LinkType::kNvLink)) {
    if (link.to == to) found.push_back(link);
  }
  EXPECT_EQ(found.size(), 1u) << from << " -> " << to;
  return found.empty() ? Link{} : found[0];
}

TEST(HwlocNvml, NvlinksGoToGpusSeenSwitchesAndOneHiddenSwitch) {
  System system = twoGpusAndAnNvSwitch();
  const std::string a = "0000:04:00.0";
  const std::string b = "0000:07:00.0";
  const std::vector<NvmlGpu> gpus = {
      NvmlGpu{0, a, 60, {b, b, b, b, "0000:99:00.0"}},
      NvmlGpu{1, b, 60, {a, a, a, a, "0000:61:00.0", "0000:61:00.0"}},
  };
  addNvmlNvlinks(gpus, nullptr, &system);
  const int gpuA = system.findByBusId(a);
  const int gpuB = system.findByBusId(b);
  const int seenSwitch = system.findByBusId("0000:61:00.0");
  EXPECT_EQ(system.node(gpuA).gpu.dev, 0);
  EXPECT_EQ(system.node(gpuB).gpu.dev, 1);
  EXPECT_EQ(system.node(gpuA).gpu.sm, 60);

  const Link ab = onlyLink(system, gpuA, gpuB);
  EXPECT_EQ(ab.count, 4);
  EXPECT_DOUBLE_EQ(ab.bandwidth, 4 * nvlinkBandwidth(60));
  EXPECT_EQ(onlyLink(system, gpuB, gpuA).count, 4);

  const Link bSwitch = onlyLink(system, gpuB, seenSwitch);
  EXPECT_EQ(bSwitch.count, 2);
  EXPECT_EQ(onlyLink(system, seenSwitch, gpuB).count, 2);

  // The peer nobody shows: one shared NVSwitch node without PCI attributes, linked both ways.
  ASSERT_EQ(countOf(system, NodeType::kNvSwitch), 2);
  const int hidden = system.nodesOfType(NodeType::kNvSwitch)[1];
  EXPECT_FALSE(system.node(hidden).pci.has_value());
  EXPECT_EQ(onlyLink(system, gpuA, hidden).count, 1);
  EXPECT_EQ(onlyLink(system, hidden, gpuA).count, 1);
}

TEST_F(HwlocFakeSysfs, NvlinkToAnIbmNpuReachesTheGpusCpu) {
  const Sysfs sysfs(root_.string());
  System system = twoGpusAndAnNvSwitch();
  const std::vector<NvmlGpu> gpus = {NvmlGpu{0, "0000:04:00.0", 70, {"0000:0a:00.0", "0000:0a:00.0"}}};
  addNvmlNvlinks(gpus, &sysfs, &system);
  const Link toCpu = onlyLink(system, system.findByBusId("0000:04:00.0"), 0);
  EXPECT_EQ(toCpu.count, 2);
  EXPECT_DOUBLE_EQ(toCpu.bandwidth, 2 * nvlinkBandwidth(70));
  EXPECT_EQ(onlyLink(system, 0, system.findByBusId("0000:04:00.0")).count, 2);
  EXPECT_EQ(countOf(system, NodeType::kNvSwitch), 1);
}

}  // namespace
}  // namespace weft::topology
