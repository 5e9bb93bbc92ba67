// NCCL topology XML: the reader on the project's fixtures (tests/fixtures/topology), its errors,
// the writer, and round trips; the real files of ../shared/topologies where that folder exists.

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "topology/nccl_xml.h"
#include "tests/unit/topology_fixture.h"
#include "topology/system.h"

namespace weft::topology {
namespace {

namespace fs = std::filesystem;

fs::path fixture(const std::string& name) { return tests::topologyFixturePath(name); }

/// The real files, beside the project's clone (../shared/topologies from its root).
fs::path realTopologies() {
  return fs::path(__FILE__).parent_path() / ".." / ".." / ".." / "shared" / "topologies";
}

System readFixture(const std::string& name) {
  System system;
  const Status status = readNcclTopologyFile(fixture(name).string(), &system);
  EXPECT_TRUE(status.isOk()) << status.message();
  return system;
}

int countOf(const System& system, NodeType type) { return static_cast<int>(system.nodesOfType(type).size()); }

int countLinks(const System& system, LinkType type) {
  int count = 0;
  for (const Link& link : system.links()) count += link.type == type ? 1 : 0;
  return count;
}

int countPorts(const System& system) {
  int count = 0;
  for (int nic : system.nodesOfType(NodeType::kNic)) count += static_cast<int>(system.node(nic).nic.ports.size());
  return count;
}

/// The link from `from` to `to` of `type`, or nullptr.
const Link* findLink(const System& system, int from, int to, LinkType type) {
  for (int index : system.linksFrom(from)) {
    const Link& link = system.links()[index];
    if (link.to == to && link.type == type) return &link;
  }
  return nullptr;
}

/// A node's name that does not depend on its index: its bus id, or its type and NUMA node.
std::string nodeKey(const System& system, int index) {
  if (index < 0) return "-";
  const Node& node = system.node(index);
  if (node.pci.has_value()) return std::string(nodeTypeName(node.type)) + " " + node.pci->busId;
  return std::string(nodeTypeName(node.type)) + " numa " + std::to_string(node.cpuNuma);
}

/// Every node (in index order) and link with every attribute, one per line: two systems are equal
/// when their descriptions are, and a difference shows as a readable diff.
std::string describe(const System& system) {
  std::string text;
  char line[512];
  for (const Node& node : system.nodes()) {
    std::snprintf(line, sizeof(line), "%s under [%s] numa %d", nodeKey(system, node.index).c_str(),
                  nodeKey(system, node.parent).c_str(), node.cpuNuma);
    text += line;
    if (node.pci.has_value()) {
      const PciAttributes& pci = *node.pci;
      std::snprintf(line, sizeof(line), " class %06x id %04x:%04x sub %04x:%04x link %g GT/s x%d", pci.classCode,
                    pci.vendor, pci.device, pci.subsystemVendor, pci.subsystemDevice, pci.linkSpeedGts,
                    pci.linkWidth);
      text += line;
    }
    if (node.type == NodeType::kCpu) {
      const CpuAttributes& cpu = node.cpu;
      std::snprintf(line, sizeof(line), " numaid %d affinity %s %s %s family %d model %d", cpu.numaId,
                    cpu.affinity.c_str(), cpu.arch.c_str(), cpu.vendor.c_str(), cpu.familyId, cpu.modelId);
      text += line;
    }
    if (node.type == NodeType::kGpu) {
      std::snprintf(line, sizeof(line), " dev %d sm %d rank %d gdr %d", node.gpu.dev, node.gpu.sm, node.gpu.rank,
                    node.gpu.gdr.has_value() ? int{*node.gpu.gdr} : -1);
      text += line;
    }
    for (const NetPort& port : node.nic.ports) {
      std::snprintf(line, sizeof(line), " [%s dev %d port %d %g Mb/s guid %llx maxconn %d gdr %d]",
                    port.name.c_str(), port.dev, port.port, port.speedMbps,
                    static_cast<unsigned long long>(port.guid), port.maxConn,
                    port.gdr.has_value() ? int{*port.gdr} : -1);
      text += line;
    }
    text += "\n";
  }
  for (const Link& link : system.links()) {
    std::snprintf(line, sizeof(line), "%s -> %s %s %.6f GB/s x%d\n", nodeKey(system, link.from).c_str(),
                  nodeKey(system, link.to).c_str(), linkTypeName(link.type), link.bandwidth, link.count);
    text += line;
  }
  text += system.nvlinkDescribed() ? "NVLinks described\n" : "NVLinks not described\n";
  return text;
}

/// Writes `system` and reads it back.
System writtenAndReadBack(const System& system) {
  System again;
  const Status status = parseNcclTopology(writeNcclTopology(system), "written", &again);
  EXPECT_TRUE(status.isOk()) << status.message() << "\n" << writeNcclTopology(system);
  return again;
}

Status parseText(const std::string& xml, System* out) { return parseNcclTopology(xml, "test.xml", out); }

// ---- reading the project's fixtures ----

TEST(NcclXmlReader, FullDumpOfAnNvSwitchBox) {
  const std::string path = fixture("full-dump-h100x8-nvswitch.xml").string();
  const System system = readFixture("full-dump-h100x8-nvswitch.xml");
  EXPECT_EQ(system.source(), "NCCL topology file " + path);
  EXPECT_TRUE(system.nvlinkDescribed());
  EXPECT_EQ(countOf(system, NodeType::kCpu), 2);
  EXPECT_EQ(countOf(system, NodeType::kPciSwitch), 12);
  EXPECT_EQ(countOf(system, NodeType::kGpu), 8);
  EXPECT_EQ(countOf(system, NodeType::kNic), 4);
  EXPECT_EQ(countOf(system, NodeType::kNvSwitch), 1);  // four NVSwitches in the file, one node as NCCL

  const int nvSwitch = system.nodesOfType(NodeType::kNvSwitch).front();
  const std::vector<int> gpus = system.nodesOfType(NodeType::kGpu);
  const char* busIds[] = {"0000:18:00.0", "0000:19:00.0", "0000:38:00.0", "0000:39:00.0",
                          "0000:98:00.0", "0000:99:00.0", "0000:b8:00.0", "0000:b9:00.0"};
  for (int dev = 0; dev < 8; ++dev) {
    const Node& gpu = system.node(gpus[dev]);
    EXPECT_EQ(gpu.gpu.dev, dev);
    EXPECT_EQ(gpu.gpu.rank, dev);
    EXPECT_EQ(gpu.gpu.sm, 90);
    EXPECT_EQ(gpu.gpu.gdr, std::optional<bool>(true));
    EXPECT_EQ(gpu.pci->busId, busIds[dev]);
    EXPECT_EQ(gpu.pci->vendor, 0x10de);
    EXPECT_EQ(gpu.pci->device, 0x2330);
    EXPECT_EQ(gpu.cpuNuma, dev < 4 ? 0 : 1);
    // GPU -> inner switch -> top switch -> CPU.
    const Node& inner = system.node(gpu.parent);
    const Node& top = system.node(inner.parent);
    EXPECT_EQ(inner.type, NodeType::kPciSwitch);
    EXPECT_EQ(top.type, NodeType::kPciSwitch);
    EXPECT_EQ(system.node(top.parent).type, NodeType::kCpu);
    EXPECT_EQ(system.node(top.parent).cpu.numaId, dev < 4 ? 0 : 1);
    const Link* up = findLink(system, gpu.index, gpu.parent, LinkType::kPci);
    ASSERT_NE(up, nullptr);
    EXPECT_DOUBLE_EQ(up->bandwidth, 48.0);  // Gen5 x16
    // 4 + 5 + 5 + 4 NVLinks to the switches, summed into one link each way.
    for (const Link* link : {findLink(system, gpu.index, nvSwitch, LinkType::kNvLink),
                             findLink(system, nvSwitch, gpu.index, LinkType::kNvLink)}) {
      ASSERT_NE(link, nullptr);
      EXPECT_EQ(link->count, 18);
      EXPECT_DOUBLE_EQ(link->bandwidth, 18 * nvlinkBandwidth(90));
    }
  }
  EXPECT_EQ(countLinks(system, LinkType::kNvLink), 16);
  EXPECT_EQ(countLinks(system, LinkType::kPci), 2 * 24);
  EXPECT_EQ(countLinks(system, LinkType::kSys), 2);
  EXPECT_EQ(countLinks(system, LinkType::kC2C), 0);

  const Node& nic = system.node(system.nodesOfType(NodeType::kNic).front());
  EXPECT_EQ(nic.pci->busId, "0000:1a:00.0");
  EXPECT_EQ(nic.pci->classCode, 0x020700u);
  ASSERT_EQ(nic.nic.ports.size(), 1u);
  EXPECT_EQ(nic.nic.ports[0].name, "mlx5_0");
  EXPECT_EQ(nic.nic.ports[0].dev, 0);
  EXPECT_EQ(nic.nic.ports[0].port, 1);
  EXPECT_DOUBLE_EQ(nic.nic.ports[0].speedMbps, 400000);
  EXPECT_EQ(nic.nic.ports[0].guid, 0x1070fd0300a0b000u);
  EXPECT_EQ(nic.nic.ports[0].maxConn, 131072);
  EXPECT_EQ(nic.nic.ports[0].gdr, std::optional<bool>(true));
  EXPECT_EQ(system.node(nic.parent).pci->busId, "0000:15:00.0");

  const Node& cpu = system.node(system.nodesOfType(NodeType::kCpu).back());
  EXPECT_EQ(cpu.cpu.numaId, 1);
  EXPECT_EQ(cpu.cpu.affinity, "ffffffff,ffff0000,00000000");
  EXPECT_EQ(cpu.cpu.arch, "x86_64");
  EXPECT_EQ(cpu.cpu.vendor, "GenuineIntel");
  EXPECT_EQ(cpu.cpu.familyId, 6);
  EXPECT_EQ(cpu.cpu.modelId, 143);
  const Link* sys = findLink(system, cpu.index, system.nodesOfType(NodeType::kCpu).front(), LinkType::kSys);
  ASSERT_NE(sys, nullptr);
  EXPECT_DOUBLE_EQ(sys->bandwidth, cpuInterconnectBandwidth(cpu.cpu));
}

TEST(NcclXmlReader, FlattenedFileInfersGpusAndNicsFromClassCodes) {
  const System system = readFixture("flattened-a100x8.xml");
  EXPECT_FALSE(system.nvlinkDescribed());
  EXPECT_EQ(countOf(system, NodeType::kCpu), 2);
  EXPECT_EQ(countOf(system, NodeType::kGpu), 8);
  EXPECT_EQ(countOf(system, NodeType::kNic), 4);  // three InfiniBand, one Ethernet
  EXPECT_EQ(countOf(system, NodeType::kPciSwitch), 5);  // four bridges and the board's VGA
  EXPECT_EQ(countOf(system, NodeType::kNvSwitch), 0);
  EXPECT_EQ(countLinks(system, LinkType::kNvLink), 0);
  EXPECT_EQ(countPorts(system), 0);

  // No dev in the file: numbered in bus-id order (8-digit domains read as 4), listed by dev.
  const std::vector<int> gpus = system.nodesOfType(NodeType::kGpu);
  for (int dev = 0; dev < 8; ++dev) {
    const Node& gpu = system.node(gpus[dev]);
    EXPECT_EQ(gpu.gpu.dev, dev);
    EXPECT_EQ(gpu.pci->busId, "000" + std::to_string(dev + 1) + ":00:00.0");
    EXPECT_EQ(gpu.gpu.sm, 0);    // unknown
    EXPECT_EQ(gpu.gpu.rank, -1);  // unknown
    EXPECT_EQ(gpu.cpuNuma, dev < 4 ? 0 : 1);
    const Link* up = findLink(system, gpu.index, gpu.parent, LinkType::kPci);
    ASSERT_NE(up, nullptr);
    EXPECT_DOUBLE_EQ(up->bandwidth, 24.0);  // "16 GT/s" x16
  }
  const int vga = system.findByBusId("0000:03:00.0");
  ASSERT_GE(vga, 0);
  EXPECT_EQ(system.node(vga).type, NodeType::kPciSwitch);  // ASPEED's VGA is no GPU
  const int ethernet = system.findByBusId("0103:00:00.0");
  ASSERT_GE(ethernet, 0);
  EXPECT_EQ(system.node(ethernet).type, NodeType::kNic);
  EXPECT_EQ(system.node(ethernet).pci->vendor, 0x15b3);
}

TEST(NcclXmlReader, CommentsBlankLinesAndMissingAttributes) {
  const System system = readFixture("comments-and-gaps.xml");
  EXPECT_TRUE(system.nvlinkDescribed());
  EXPECT_EQ(countOf(system, NodeType::kCpu), 2);
  EXPECT_EQ(countOf(system, NodeType::kPciSwitch), 1);
  EXPECT_EQ(countOf(system, NodeType::kGpu), 2);
  EXPECT_EQ(countOf(system, NodeType::kNic), 2);
  EXPECT_EQ(countOf(system, NodeType::kNvSwitch), 1);

  const Node& cpu = system.node(system.nodesOfType(NodeType::kCpu).front());
  EXPECT_EQ(cpu.cpu.affinity, "");
  EXPECT_EQ(cpu.cpu.familyId, -1);
  EXPECT_EQ(cpu.cpu.modelId, -1);
  const Node& bareCpu = system.node(system.nodesOfType(NodeType::kCpu).back());
  EXPECT_EQ(bareCpu.cpu.numaId, 1);
  EXPECT_EQ(bareCpu.cpu.arch, "");

  // dev 0 is given to 5e; 3b has none and takes the next free number.
  const std::vector<int> gpus = system.nodesOfType(NodeType::kGpu);
  const Node& first = system.node(gpus[0]);
  const Node& second = system.node(gpus[1]);
  EXPECT_EQ(first.pci->busId, "0000:5e:00.0");
  EXPECT_EQ(first.gpu.dev, 0);
  EXPECT_EQ(second.pci->busId, "0000:3b:00.0");
  EXPECT_EQ(second.gpu.dev, 1);
  EXPECT_EQ(second.gpu.rank, -1);  // rank="" is unknown
  EXPECT_EQ(second.pci->vendor, 0x10de);
  EXPECT_EQ(second.pci->device, 0x20b5);
  EXPECT_EQ(first.pci->linkSpeedGts, 0);
  EXPECT_EQ(first.pci->linkWidth, 0);

  const int switchNode = system.findByBusId("3a:00.0");
  ASSERT_GE(switchNode, 0);
  EXPECT_EQ(second.parent, switchNode);
  const Link* unknownLink = findLink(system, switchNode, cpu.index, LinkType::kPci);
  ASSERT_NE(unknownLink, nullptr);
  EXPECT_DOUBLE_EQ(unknownLink->bandwidth, pciBandwidth(0, 0));  // unknown speed: NCCL's default

  // GPU to GPU both ways (one without tclass), and the unlisted peer without class: an NVSwitch.
  const Link* forward = findLink(system, second.index, first.index, LinkType::kNvLink);
  const Link* backward = findLink(system, first.index, second.index, LinkType::kNvLink);
  ASSERT_NE(forward, nullptr);
  ASSERT_NE(backward, nullptr);
  EXPECT_EQ(forward->count, 12);
  EXPECT_DOUBLE_EQ(forward->bandwidth, 12 * nvlinkBandwidth(80));
  EXPECT_EQ(backward->count, 12);
  const int nvSwitch = system.nodesOfType(NodeType::kNvSwitch).front();
  const Link* toSwitch = findLink(system, first.index, nvSwitch, LinkType::kNvLink);
  ASSERT_NE(toSwitch, nullptr);
  EXPECT_EQ(toSwitch->count, 2);
  EXPECT_NE(findLink(system, nvSwitch, first.index, LinkType::kNvLink), nullptr);
  EXPECT_EQ(findLink(system, second.index, nvSwitch, LinkType::kNvLink), nullptr);

  // The two <nic> of CPU 0 are one NIC without PCI function, with both ports.
  int cpuNic = -1;
  for (int nic : system.nodesOfType(NodeType::kNic)) {
    if (!system.node(nic).pci.has_value()) cpuNic = nic;
  }
  ASSERT_GE(cpuNic, 0);
  const Node& nic = system.node(cpuNic);
  EXPECT_EQ(nic.parent, cpu.index);
  EXPECT_EQ(nic.cpuNuma, 0);
  ASSERT_EQ(nic.nic.ports.size(), 2u);
  EXPECT_EQ(nic.nic.ports[0].name, "eth0");
  EXPECT_DOUBLE_EQ(nic.nic.ports[0].speedMbps, 25000);
  EXPECT_EQ(nic.nic.ports[1].name, "eth1");
  EXPECT_EQ(nic.nic.ports[1].speedMbps, 0);  // unknown
  EXPECT_EQ(nic.nic.ports[1].port, 1);

  const int flatNic = system.findByBusId("0000:86:00.0");
  ASSERT_GE(flatNic, 0);
  EXPECT_EQ(system.node(flatNic).type, NodeType::kNic);
  EXPECT_EQ(system.node(flatNic).cpuNuma, 1);
}

TEST(NcclXmlReader, GraceHopperChipToChipLink) {
  const System system = readFixture("grace-hopper-c2c.xml");
  const int gpu = system.nodesOfType(NodeType::kGpu).front();
  const int cpu = system.nodesOfType(NodeType::kCpu).front();
  EXPECT_EQ(system.node(cpu).cpu.arch, "arm64");
  for (const Link* link : {findLink(system, gpu, cpu, LinkType::kC2C), findLink(system, cpu, gpu, LinkType::kC2C)}) {
    ASSERT_NE(link, nullptr);
    EXPECT_EQ(link->count, 10);
    EXPECT_DOUBLE_EQ(link->bandwidth, 450.0);  // 45000 MB/s x 10
  }
  EXPECT_EQ(countLinks(system, LinkType::kNvLink), 0);
}

TEST(NcclXmlReader, NvLinkPeersByTargetClass) {
  // POWER9's NPU (0x068001): the NVLink ends in the CPU. A hidden NVSwitch target (not a bus id).
  // A GPU peer the file does not list: skipped, as NCCL does.
  const std::string xml = R"(<system version="1">
  <cpu numaid="0" arch="ppc64">
    <pci busid="0004:04:00.0" class="0x030200">
      <gpu dev="0" sm="70">
        <nvlink target="0004:00:00.0" count="3" tclass="0x068001"/>
        <nvlink target="fffffff:ff:ff.0" count="6" tclass="0x068000"/>
        <nvlink target="0035:03:00.0" count="1" tclass="0x030200"/>
      </gpu>
    </pci>
  </cpu>
</system>)";
  System system;
  const Status status = parseText(xml, &system);
  ASSERT_TRUE(status.isOk()) << status.message();
  const int gpu = system.nodesOfType(NodeType::kGpu).front();
  const int cpu = system.nodesOfType(NodeType::kCpu).front();
  const int nvSwitch = system.nodesOfType(NodeType::kNvSwitch).front();
  const Link* toCpu = findLink(system, gpu, cpu, LinkType::kNvLink);
  ASSERT_NE(toCpu, nullptr);
  EXPECT_EQ(toCpu->count, 3);
  EXPECT_DOUBLE_EQ(toCpu->bandwidth, 3 * nvlinkBandwidth(70));
  EXPECT_NE(findLink(system, cpu, gpu, LinkType::kNvLink), nullptr);
  const Link* toSwitch = findLink(system, gpu, nvSwitch, LinkType::kNvLink);
  ASSERT_NE(toSwitch, nullptr);
  EXPECT_EQ(toSwitch->count, 6);
  EXPECT_FALSE(system.node(nvSwitch).pci.has_value());
  EXPECT_EQ(countLinks(system, LinkType::kNvLink), 4);
  EXPECT_EQ(describe(writtenAndReadBack(system)), describe(system));
}

TEST(NcclXmlReader, NicInAHostBridgeAndTextWithoutLinkSpeed) {
  // As VMs dump them: the NIC's ports under a host bridge (class 0x060000), link_speed="".
  const std::string xml = R"(<system version="1">
  <cpu numaid="0">
    <pci busid="0000:00:00.0" class="0x060000" vendor="0x8086" link_speed="" link_width="0">
      <nic>
        <net name="mlx5_0" dev="0" speed="100000" port="1" guid="0x6e65480003739de0"/>
        <net name="mlx5_1" dev="1" speed="100000" port="2" guid="0x6e65480003739de0"/>
      </nic>
    </pci>
    <pci busid="0000:01:00.0" class="0x030200" link_speed="Unknown" link_width="16"/>
  </cpu>
</system>)";
  System system;
  ASSERT_TRUE(parseText(xml, &system).isOk());
  const std::vector<int> nics = system.nodesOfType(NodeType::kNic);
  ASSERT_EQ(nics.size(), 1u);
  const Node& nic = system.node(nics.front());
  EXPECT_EQ(nic.pci->classCode, 0x060000u);
  EXPECT_EQ(nic.pci->linkSpeedGts, 0);
  EXPECT_EQ(nic.pci->linkWidth, 0);
  ASSERT_EQ(nic.nic.ports.size(), 2u);
  EXPECT_EQ(nic.nic.ports[1].port, 2);
  EXPECT_EQ(system.node(system.nodesOfType(NodeType::kGpu).front()).pci->linkSpeedGts, 0);
  EXPECT_FALSE(system.nvlinkDescribed());  // a <nic> says nothing about NVLinks
}

// ---- errors ----

/// Reads fixture `name`, expects kInvalidArgument and returns the message.
std::string errorOf(const std::string& name) {
  System system;
  const Status status = readNcclTopologyFile(fixture(name).string(), &system);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << name;
  EXPECT_TRUE(system.nodes().empty()) << "a failed read leaves the System as it was";
  return status.message();
}

TEST(NcclXmlErrors, FileThatCannotBeRead) {
  System system;
  const std::string missing = fixture("no-such-file.xml").string();
  Status status = readNcclTopologyFile(missing, &system);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find(missing), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("No such file or directory"), std::string::npos) << status.message();

  status = readNcclTopologyFile(fixture("").string(), &system);  // a folder
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("Is a directory"), std::string::npos) << status.message();
}

TEST(NcclXmlErrors, XmlThatDoesNotParseNamesFileAndLine) {
  const std::string message = errorOf("broken-mismatched-tags.xml");
  EXPECT_NE(message.find("broken-mismatched-tags.xml, line 4: not well-formed XML"), std::string::npos) << message;
  EXPECT_NE(message.find("mismatch"), std::string::npos) << message;  // pugixml's description

  System system;
  const Status empty = parseText("", &system);
  EXPECT_EQ(empty.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(empty.message().find("test.xml, line 1: not well-formed XML"), std::string::npos) << empty.message();
}

TEST(NcclXmlErrors, LinesAreCountedInFilesWithWindowsLineEnds) {
  System system;
  const Status status =
      parseText("<system version=\"1\">\r\n\r\n<cpu numaid=\"0\">\r\n<pci busid=\"0000:01:00.0\" class=\"0x03020g\"/>"
                "\r\n</cpu>\r\n</system>\r\n",
                &system);
  EXPECT_NE(status.message().find("test.xml, line 4: <pci> attribute class=\"0x03020g\""), std::string::npos)
      << status.message();
}

TEST(NcclXmlErrors, RootThatIsNotSystem) {
  const std::string message = errorOf("broken-hwloc-root.xml");
  EXPECT_NE(message.find("the root element is <topology>, not <system>"), std::string::npos) << message;
  EXPECT_NE(message.find("hwloc XML"), std::string::npos) << message;
}

TEST(NcclXmlErrors, BadAttributeValueNamesLineElementAttributeAndValue) {
  const std::string message = errorOf("broken-class-value.xml");
  EXPECT_NE(message.find("broken-class-value.xml, line 4: <pci> attribute class=\"zz\" is not a hexadecimal number"),
            std::string::npos)
      << message;

  System system;
  struct Case {
    const char* element;
    const char* expected;
  };
  const Case cases[] = {
      {R"(<pci busid="0000:01:00.0" vendor="0x12345"/>)",
       "<pci> attribute vendor=\"0x12345\" is not a hexadecimal number in range"},
      {R"(<pci busid="0000:01:00.0" link_width="x16"/>)",
       "<pci> attribute link_width=\"x16\" is not a decimal integer"},
      {R"(<pci busid="0000:01:00.0" link_width="-4"/>)", "<pci> attribute link_width=\"-4\" is not a lane count"},
      {R"(<pci busid="0000:1:00.0:1"/>)", "<pci> attribute busid=\"0000:1:00.0:1\" is not a PCI bus id"},
      {R"(<pci busid="0000:01:00.0"><gpu gdr="yes"/></pci>)", "<gpu> attribute gdr=\"yes\" is not 0 or 1"},
      {R"(<pci busid="0000:01:00.0"><gpu><nvlink target="0000:02:00.0" count="0"/></gpu></pci>)",
       "<nvlink> attribute count=\"0\" is not a number of links"},
      {R"(<pci busid="0000:01:00.0"><gpu><nvlink target="0000:01:00.0"/></gpu></pci>)",
       "<nvlink> links GPU 0000:01:00.0 to itself"},
      {R"(<pci busid="0000:01:00.0"><gpu><c2c count="2"/></gpu></pci>)", "<c2c> attribute bw=\"\" is not a bandwidth"},
      {R"(<pci busid="0000:01:00.0"><nic><net speed="fast"/></nic></pci>)",
       "<net> attribute speed=\"fast\" is not a decimal number"},
  };
  for (const Case& test : cases) {
    const std::string xml =
        std::string("<system version=\"1\">\n<cpu numaid=\"0\">\n") + test.element + "\n</cpu>\n</system>\n";
    const Status status = parseText(xml, &system);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << test.element;
    EXPECT_NE(status.message().find(std::string("test.xml, line 3: ") + test.expected), std::string::npos)
        << status.message();
  }
  const Status numa = parseText("<system>\n<cpu numaid=\"zero\"/>\n</system>", &system);
  EXPECT_NE(numa.message().find("line 2: <cpu> attribute numaid=\"zero\" is not a decimal integer"), std::string::npos)
      << numa.message();
}

TEST(NcclXmlErrors, NvLinkTargetThatIsNoBusId) {
  const std::string message = errorOf("broken-nvlink-target.xml");
  EXPECT_NE(message.find("line 5: <nvlink> attribute target=\"GPU1\" is not a PCI bus id"), std::string::npos)
      << message;
}

TEST(NcclXmlErrors, StructureThatCannotBeRead) {
  std::string message = errorOf("broken-repeated-busid.xml");
  EXPECT_NE(message.find("line 6: <pci> repeats bus id 0000:3b:00.0 of line 3"), std::string::npos) << message;
  message = errorOf("broken-missing-busid.xml");
  EXPECT_NE(message.find("line 3: <pci> has no busid attribute"), std::string::npos) << message;
  message = errorOf("broken-pci-outside-cpu.xml");
  EXPECT_NE(message.find("line 2: <pci> is outside every <cpu>"), std::string::npos) << message;
  message = errorOf("broken-no-cpu.xml");
  EXPECT_NE(message.find("line 2: <system> holds no <cpu> element"), std::string::npos) << message;
  message = errorOf("broken-gpu-and-nic.xml");
  EXPECT_NE(message.find("line 3: <pci> holds both a <gpu> and a <nic>"), std::string::npos) << message;
  message = errorOf("broken-gpu-under-cpu.xml");
  EXPECT_NE(message.find("line 3: <gpu> is directly under <cpu>"), std::string::npos) << message;
}

// ---- writing ----

TEST(NcclXmlWriter, WritesNcclsFormatIndentedByTwoSpaces) {
  const std::string xml = writeNcclTopology(readFixture("full-dump-h100x8-nvswitch.xml"));
  const std::string start =
      "<system version=\"1\">\n"
      "  <cpu numaid=\"0\" affinity=\"00000000,0000ffff,ffffffff\" arch=\"x86_64\" vendor=\"GenuineIntel\" "
      "familyid=\"6\" modelid=\"143\">\n"
      "    <pci busid=\"0000:15:00.0\" class=\"0x060400\" vendor=\"0x1000\" device=\"0xc030\" "
      "subsystem_vendor=\"0x1000\" subsystem_device=\"0x100b\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">\n";
  EXPECT_EQ(xml.substr(0, start.size()), start) << xml;
  EXPECT_NE(xml.find("          <gpu dev=\"0\" sm=\"90\" rank=\"0\" gdr=\"1\">\n"
                     "            <nvlink target=\"fffffff:ff:ff.0\" count=\"18\" tclass=\"0x068000\" />\n"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<net name=\"mlx5_3\" dev=\"3\" speed=\"400000\" port=\"1\" guid=\"0x1070fd0300a0b003\" "
                     "maxconn=\"131072\" gdr=\"1\" />"),
            std::string::npos)
      << xml;
}

TEST(NcclXmlWriter, FlattenedSystemStaysFlattened) {
  const std::string xml = writeNcclTopology(readFixture("flattened-a100x8.xml"));
  EXPECT_EQ(xml.find("<gpu"), std::string::npos) << xml;
  EXPECT_EQ(xml.find("<nic"), std::string::npos) << xml;
  EXPECT_NE(xml.find("<pci busid=\"0001:00:00.0\" class=\"0x030200\" link_speed=\"16.0 GT/s PCIe\" "
                     "link_width=\"16\" />"),
            std::string::npos)
      << xml;
}

// Found by the nccl_xml fuzz target: a link speed too long for the writer's number buffer came out
// as uninitialised bytes. Any number the reader accepts must write back as that number.
TEST(NcclXmlWriter, HugeLinkSpeedWritesBackAsItsNumber) {
  System system;
  ASSERT_TRUE(parseText("<system version=\"1\"><cpu numaid=\"0\">"
                        "<pci busid=\"0000:01:00.0\" class=\"0x030200\" "
                        "link_speed=\"16666666666666666666666666666666666 GT/s\" link_width=\"16\"/>"
                        "</cpu></system>",
                        &system)
                  .isOk());
  const std::string xml = writeNcclTopology(system);
  EXPECT_NE(xml.find("link_speed=\"16666666666666666"), std::string::npos) << xml;
  System again;
  ASSERT_TRUE(parseText(xml, &again).isOk()) << xml;
  EXPECT_EQ(writeNcclTopology(again), xml);
}

/// A node of NUMA node 0 below `parent`.
Node nodeBelow(NodeType type, int parent, std::optional<PciAttributes> pci) {
  Node node;
  node.type = type;
  node.parent = parent;
  node.cpuNuma = 0;
  node.pci = std::move(pci);
  return node;
}

TEST(NcclXmlWriter, HandBuiltSystemReadsBackEqual) {
  System system;
  Node cpu = nodeBelow(NodeType::kCpu, -1, std::nullopt);
  cpu.cpu.numaId = 0;
  cpu.cpu.vendor = "AuthenticAMD";
  const int cpuIndex = system.addNode(cpu);
  const int bridgeIndex = system.addNode(
      nodeBelow(NodeType::kPciSwitch, cpuIndex, PciAttributes{"0000:40:01.0", 0x060400, 0x1022, 0x1483, 0, 0, 16, 16}));
  Node nic = nodeBelow(NodeType::kNic, bridgeIndex,
                       PciAttributes{"0000:41:00.0", 0x020000, 0x15b3, 0x101d, 0x15b3, 0x0047, 16, 16});
  nic.nic.ports.push_back(NetPort{"mlx5_0", 0, 1, 200000, 0xb83fd20300112233ull, 65536, true});
  const int nicIndex = system.addNode(nic);
  int gpuIndex[2];
  for (int dev = 0; dev < 2; ++dev) {
    const char* busId = dev == 0 ? "0000:42:00.0" : "0000:43:00.0";
    Node gpu = nodeBelow(NodeType::kGpu, bridgeIndex, PciAttributes{busId, 0x030200, 0x10de, 0x20b2, 0, 0, 2.5, 8});
    gpu.gpu = GpuAttributes{dev, 80, -1, true};
    gpuIndex[dev] = system.addNode(gpu);
  }
  for (int index : {bridgeIndex, nicIndex, gpuIndex[0], gpuIndex[1]}) {
    const PciAttributes& pci = *system.node(index).pci;
    system.addLink(index, system.node(index).parent, LinkType::kPci, pciBandwidth(pci.linkSpeedGts, pci.linkWidth));
  }
  system.addDirectedLink(gpuIndex[0], gpuIndex[1], LinkType::kNvLink, 4 * nvlinkBandwidth(80), 4);
  system.addDirectedLink(gpuIndex[1], gpuIndex[0], LinkType::kNvLink, 4 * nvlinkBandwidth(80), 4);
  system.setNvlinkDescribed(true);

  const System again = writtenAndReadBack(system);
  EXPECT_EQ(describe(again), describe(system)) << writeNcclTopology(system);
  EXPECT_EQ(again.source(), "NCCL topology file written");
}

// ---- round trips ----

class NcclXmlRoundTrip : public testing::TestWithParam<std::string> {};

TEST_P(NcclXmlRoundTrip, ReadWriteReadIsEqualAndWritingIsStable) {
  const System system = readFixture(GetParam());
  ASSERT_FALSE(system.nodes().empty());
  const System again = writtenAndReadBack(system);
  EXPECT_EQ(describe(again), describe(system)) << writeNcclTopology(system);
  EXPECT_EQ(writeNcclTopology(again), writeNcclTopology(system));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, NcclXmlRoundTrip,
                         testing::Values("full-dump-h100x8-nvswitch.xml", "flattened-a100x8.xml",
                                         "comments-and-gaps.xml", "grace-hopper-c2c.xml"),
                         [](const testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param.substr(0, info.param.find('.'));
                           for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return name;
                         });

// ---- the real files (../shared/topologies) ----

/// What each real NCCL file holds, counted by reading it (see that folder's README.md).
struct RealNcclFile {
  const char* name;
  int cpus;              // NUMA nodes
  int pciSwitches;       // bridges (and other PCI functions that are neither GPU nor NIC)
  int gpus;
  int nics;              // NIC nodes (a dual-port card is one)
  int ports;             // <net> elements
  int nvSwitches;        // 1 where GPUs link to NVSwitches (NCCL's one shared node), else 0
  int nvlinksPerGpu;     // NVLinks from each GPU (all to the NVSwitch), 0 where none are described
  int gpuSm;             // 0 where the file does not say
  bool nvlinkDescribed;  // a full dump (it has <gpu> elements)
};

const RealNcclFile kRealNcclFiles[] = {
    {"azure-ndv4-a100x8-ib.xml", 4, 4, 8, 8, 0, 0, 0, 0, false},
    {"azure-ndv5-h100x8-ib.xml", 2, 8, 8, 8, 0, 0, 0, 0, false},
    {"azure-ndv2-v100x8.xml", 2, 0, 8, 1, 0, 0, 0, 0, false},
    {"aws-p4d-24xl-a100x8-efa.xml", 2, 4, 8, 4, 0, 0, 0, 0, false},
    {"oci-bm-gpu4.8-a100x8.xml", 4, 30, 8, 8, 16, 1, 12, 80, true},  // 6 NVSwitches x 2 links
    {"oci-bm-gpu-h100.8.xml", 2, 24, 8, 8, 16, 1, 18, 90, true},    // 4 NVSwitches, 5+5+4+4
    {"panlichen-rtx3090x8-pcie.xml", 2, 2, 8, 1, 1, 0, 0, 86, true},
    {"modal-b200x8-vm.xml", 2, 0, 8, 3, 13, 1, 18, 100, true},      // NVSwitch hidden in the VM
};

void PrintTo(const RealNcclFile& file, std::ostream* out) { *out << file.name; }

class NcclXmlRealFile : public testing::TestWithParam<RealNcclFile> {
 protected:
  void SetUp() override {
    path_ = realTopologies() / GetParam().name;
    if (!fs::exists(path_)) {
      GTEST_SKIP() << path_.string() << " is absent: the real topology files live beside the project's "
                   << "clone (../shared/topologies), as in CI";
    }
  }
  fs::path path_;
};

TEST_P(NcclXmlRealFile, CountsAreThoseOfTheMachine) {
  const RealNcclFile& expected = GetParam();
  System system;
  const Status status = readNcclTopologyFile(path_.string(), &system);
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_EQ(countOf(system, NodeType::kCpu), expected.cpus);
  EXPECT_EQ(countOf(system, NodeType::kPciSwitch), expected.pciSwitches);
  EXPECT_EQ(countOf(system, NodeType::kGpu), expected.gpus);
  EXPECT_EQ(countOf(system, NodeType::kNic), expected.nics);
  EXPECT_EQ(countPorts(system), expected.ports);
  EXPECT_EQ(countOf(system, NodeType::kNvSwitch), expected.nvSwitches);
  EXPECT_EQ(system.nvlinkDescribed(), expected.nvlinkDescribed);

  std::set<int> numaNodes;
  for (int cpu : system.nodesOfType(NodeType::kCpu)) numaNodes.insert(system.node(cpu).cpu.numaId);
  EXPECT_EQ(static_cast<int>(numaNodes.size()), expected.cpus);

  const std::vector<int> gpus = system.nodesOfType(NodeType::kGpu);
  for (size_t i = 0; i < gpus.size(); ++i) {
    const Node& gpu = system.node(gpus[i]);
    EXPECT_EQ(gpu.gpu.dev, static_cast<int>(i));
    EXPECT_EQ(gpu.gpu.sm, expected.gpuSm);
    EXPECT_TRUE(numaNodes.count(gpu.cpuNuma)) << gpu.pci->busId;
    int nvlinks = 0;
    for (int index : system.linksFrom(gpu.index)) {
      const Link& link = system.links()[index];
      if (link.type != LinkType::kNvLink) continue;
      EXPECT_EQ(system.node(link.to).type, NodeType::kNvSwitch);
      EXPECT_DOUBLE_EQ(link.bandwidth, link.count * nvlinkBandwidth(expected.gpuSm));
      nvlinks += link.count;
    }
    EXPECT_EQ(nvlinks, expected.nvlinksPerGpu) << gpu.pci->busId;
  }
  // Every CPU reaches every other; every other node hangs below one.
  EXPECT_EQ(countLinks(system, LinkType::kSys), expected.cpus * (expected.cpus - 1));
  for (const Node& node : system.nodes()) {
    if (node.type == NodeType::kCpu || node.type == NodeType::kNvSwitch) continue;
    EXPECT_GE(node.parent, 0) << nodeKey(system, node.index);
    EXPECT_GE(node.cpuNuma, 0) << nodeKey(system, node.index);
  }
}

TEST_P(NcclXmlRealFile, RoundTripIsEqualAndStable) {
  System system;
  const Status status = readNcclTopologyFile(path_.string(), &system);
  ASSERT_TRUE(status.isOk()) << status.message();
  const System again = writtenAndReadBack(system);
  EXPECT_EQ(describe(again), describe(system));
  EXPECT_EQ(writeNcclTopology(again), writeNcclTopology(system));
}

INSTANTIATE_TEST_SUITE_P(SharedTopologies, NcclXmlRealFile, testing::ValuesIn(kRealNcclFiles),
                         [](const testing::TestParamInfo<RealNcclFile>& info) {
                           std::string name = info.param.name;
                           name = name.substr(0, name.rfind('.'));
                           for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return name;
                         });

}  // namespace
}  // namespace weft::topology
