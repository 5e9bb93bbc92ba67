#pragma once
// The system graph: what a machine is made of and how its parts connect, as NCCL's topology
// models it. Nodes are CPUs (one per NUMA node), PCI switches (bridges), GPUs, NICs and NVSwitches;
// links are NVLink, C2C, PCIe, the CPU interconnect and the network. A System is built once (by
// the hwloc detector or a file reader) and then only read.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace weft::topology {

enum class NodeType { kCpu, kPciSwitch, kGpu, kNic, kNvSwitch };

/// "CPU", "PCI", "GPU", "NIC", "NVS" (as NCCL's logs name them).
const char* nodeTypeName(NodeType type);

enum class LinkType {
  kNvLink,  // GPU-GPU or GPU-NVSwitch NVLinks (count links of one bandwidth each)
  kC2C,     // a GPU's chip-to-chip link to its CPU (Grace Hopper)
  kPci,     // a PCIe link between a device or switch and the node above it
  kSys,     // the interconnect between two CPUs (sockets / NUMA nodes)
  kNet,     // a NIC port to the network
};

/// "NVL", "C2C", "PCI", "SYS", "NET".
const char* linkTypeName(LinkType type);

/// A PCI function as lspci and NCCL's XML describe it. Every field may be unknown (0 / empty).
struct PciAttributes {
  std::string busId;         // canonical "dddd:bb:dd.f", lower case
  uint32_t classCode = 0;    // 0x030200 (3D controller), 0x020700 (InfiniBand), ...
  uint16_t vendor = 0;
  uint16_t device = 0;
  uint16_t subsystemVendor = 0;
  uint16_t subsystemDevice = 0;
  double linkSpeedGts = 0;   // per lane: 2.5, 5, 8, 16, 32, 64
  int linkWidth = 0;         // lanes
};

struct CpuAttributes {
  int numaId = -1;
  std::string affinity;      // the cpuset as NCCL writes it: "ffffffff,00000000" (hex words)
  std::string arch;          // "x86_64", "arm64", "ppc64"
  std::string vendor;        // "GenuineIntel", "AuthenticAMD"
  int familyId = -1;
  int modelId = -1;
};

struct GpuAttributes {
  int dev = -1;              // CUDA device index on its host
  int sm = 0;                // compute capability x 10 (90 for Hopper); 0 when unknown
  int rank = -1;             // the rank using it, when a communicator placed one
  std::optional<bool> gdr;   // GPUDirect RDMA capable, where the source says
};

/// One port of a NIC, as NCCL's <net> element describes it.
struct NetPort {
  std::string name;          // "mlx5_0", "eth0"
  int dev = -1;              // the network plugin's device index
  int port = 1;
  double speedMbps = 0;      // 100000 for 100 Gb/s
  uint64_t guid = 0;
  int maxConn = 0;
  std::optional<bool> gdr;   // GPUDirect RDMA capable, where the source says
};

struct NicAttributes {
  std::vector<NetPort> ports;
};

struct Node {
  int index = -1;            // position in System::nodes()
  NodeType type = NodeType::kCpu;
  int parent = -1;           // the node above in the PCI tree (a switch or a CPU); -1 for CPUs
  std::optional<PciAttributes> pci;  // set for nodes that are PCI functions or bridges
  CpuAttributes cpu;         // kCpu only
  GpuAttributes gpu;         // kGpu only
  NicAttributes nic;         // kNic only
  int cpuNuma = -1;          // the NUMA node (CpuAttributes::numaId) this node hangs under
};

/// A directed link; the graph holds both directions of every physical link.
struct Link {
  int from = -1;
  int to = -1;
  LinkType type = LinkType::kPci;
  double bandwidth = 0;      // GB/s in this direction, all lanes or links together
  int count = 1;             // NVLinks bundled in this link
};

/// The machine. Built with addNode/addLink, then read-only.
class System {
 public:
  /// Adds `node` (its index is set) and returns the index.
  int addNode(Node node);
  /// Adds both directions of a physical link.
  void addLink(int a, int b, LinkType type, double bandwidth, int count = 1);
  /// Adds one direction only (NCCL's <nvlink> is written once per end).
  void addDirectedLink(int from, int to, LinkType type, double bandwidth, int count = 1);

  const std::vector<Node>& nodes() const { return nodes_; }
  const Node& node(int index) const { return nodes_[index]; }
  Node& mutableNode(int index) { return nodes_[index]; }
  const std::vector<Link>& links() const { return links_; }
  /// Indices of the links leaving `node`.
  const std::vector<int>& linksFrom(int node) const { return adjacency_[node]; }
  /// Indices of the nodes of `type`, in insertion order (GPUs ordered by dev where the source gives it).
  std::vector<int> nodesOfType(NodeType type) const;
  /// The node whose PCI bus id is `busId` (any case, with or without domain), or -1.
  int findByBusId(const std::string& busId) const;

  /// Whether the source described NVLinks at all. Flattened NCCL files (a PCI tree only) and hwloc
  /// files without NVLink information do not: then the absence of NVLink links means "unknown",
  /// not "none", and reports say so.
  bool nvlinkDescribed() const { return nvlinkDescribed_; }
  void setNvlinkDescribed(bool described) { nvlinkDescribed_ = described; }
  /// Where the system came from: "hwloc detection", "NCCL topology file X", "hwloc XML file X".
  const std::string& source() const { return source_; }
  void setSource(std::string source) { source_ = std::move(source); }

 private:
  std::vector<Node> nodes_;
  std::vector<Link> links_;
  std::vector<std::vector<int>> adjacency_;
  bool nvlinkDescribed_ = false;
  std::string source_;
};

/// "0000:3b:00.0" from "3b:00.0", "0000:3B:00.0", "00000000:3b:00.0"; empty if not a bus id.
std::string canonicalBusId(const std::string& text);

// Link bandwidths in GB/s per direction, as NCCL's model uses them.
/// A PCIe link: per-lane rate by generation (2.5 GT/s: 0.25 GB/s ... 64 GT/s: 6 GB/s) x width.
/// Unknown speed or width counts as Gen3 x16 (12 GB/s, NCCL's default).
double pciBandwidth(double linkSpeedGts, int linkWidth);
/// One NVLink of a GPU of compute capability `sm` (x10): 18 (Pascal), 20 (Volta, Ampere),
/// 20.6 (Hopper), 40.1 (Blackwell).
double nvlinkBandwidth(int sm);
/// The interconnect between two CPUs of `vendor`/`arch` (QPI/UPI, Infinity Fabric, X-Bus, ...).
double cpuInterconnectBandwidth(const CpuAttributes& cpu);
/// A NIC port: its speed in GB/s (speedMbps / 8000); unknown speed counts as 100 Gb/s.
double netBandwidth(const NetPort& port);
/// A NIC's bandwidth in GB/s: the sum of its ports' (netBandwidth), or one port of unknown speed's
/// when it has none.
double nicBandwidth(const Node& nic);

/// True for GPUs: PCI class 0x0302xx (3D controller), or 0x0300xx (VGA) from NVIDIA (0x10de) or
/// AMD (0x1002) (a server's board VGA, such as ASPEED's, is not a GPU).
bool isGpuClass(uint32_t classCode, uint16_t vendor);
/// True for PCI class codes of network controllers (0x0200xx Ethernet, 0x0207xx InfiniBand).
bool isNicClass(uint32_t classCode);
/// True for PCI-to-PCI bridges (0x0604xx).
bool isBridgeClass(uint32_t classCode);

}  // namespace weft::topology
