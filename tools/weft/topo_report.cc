#include "tools/weft/topo_report.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "topology/gdr.h"
#include "topology/nvls.h"

namespace weft::tools {
namespace {

using topology::NodeType;
using topology::Paths;
using topology::System;

// The GPUs and NICs of the report, in the order rows and columns list them.
struct Devices {
  std::vector<int> gpus;
  std::vector<int> nics;
  std::vector<std::string> labels;  // "GPU0", ..., "NIC0", ...
  std::vector<int> all;             // gpus, then nics
};

Devices devicesOf(const System& system) {
  Devices devices;
  devices.gpus = system.nodesOfType(NodeType::kGpu);
  devices.nics = system.nodesOfType(NodeType::kNic);
  for (size_t i = 0; i < devices.gpus.size(); ++i) {
    const int dev = system.node(devices.gpus[i]).gpu.dev;
    devices.labels.push_back("GPU" + std::to_string(dev >= 0 ? dev : static_cast<int>(i)));
    devices.all.push_back(devices.gpus[i]);
  }
  for (size_t i = 0; i < devices.nics.size(); ++i) {
    devices.labels.push_back("NIC" + std::to_string(i));
    devices.all.push_back(devices.nics[i]);
  }
  return devices;
}

std::string busIdOf(const topology::Node& node) { return node.pci.has_value() ? node.pci->busId : ""; }

std::string nicName(const topology::Node& node) {
  return node.nic.ports.empty() ? busIdOf(node) : node.nic.ports.front().name;
}

// The affinity of the CPU (NUMA node) `numa`, as NCCL writes it, or "N/A".
std::string affinityOf(const System& system, int numa) {
  for (int cpu : system.nodesOfType(NodeType::kCpu)) {
    const topology::Node& node = system.node(cpu);
    if (node.cpu.numaId == numa && !node.cpu.affinity.empty()) return node.cpu.affinity;
  }
  return "N/A";
}

void appendCell(std::string* line, const std::string& text, size_t width) {
  *line += text;
  if (text.size() < width) line->append(width - text.size(), ' ');
}

// Per GPU, the NICs that reach its memory themselves (GPUDirect RDMA) under policy `gdr`, with the
// path the data takes: "  GPU0: NIC0 (PIX) NIC1 (PXN)", or "  GPU3: none, through host memory
// (nearest NIC: SYS)".
std::string gdrLines(const System& system, const Paths& paths, const Devices& devices,
                     const topology::NetGdrPolicy& gdr) {
  std::string out = "\nGPUDirect RDMA (NCCL_NET_GDR_LEVEL=" +
                    std::string(gdr.level ? topology::pathTypeName(*gdr.level) : "PXB, the default") +
                    ", NCCL_NET_GDR_C2C=" + (gdr.c2c ? "1" : "0") + "):\n";
  for (size_t g = 0; g < devices.gpus.size(); ++g) {
    std::string line = "  " + devices.labels[g] + ":";
    topology::PathType nearest = topology::PathType::kDis;
    bool ruledOut = true;
    for (size_t n = 0; n < devices.nics.size(); ++n) {
      const topology::NetPath net = topology::netPath(system, paths, devices.gpus[g], devices.nics[n], gdr);
      nearest = std::min(nearest, net.distance);
      ruledOut &= !net.capable;
      if (net.gdr) line += " NIC" + std::to_string(n) + " (" + topology::pathTypeName(net.toNic.type) + ")";
    }
    if (line.back() == ':') {
      line += std::string(" none, ") + (ruledOut ? "the source says gdr=\"0\", " : "") +
              "through host memory (nearest NIC: " + topology::pathTypeName(nearest) + ")";
    }
    out += line + "\n";
  }
  return out;
}

// "Ring 0: GPU0 GPU1 ... GPU7 (NVL, 20.6 GB/s)" per ring, or why there is none.
std::string ringLines(const topology::RingSet& rings, const Devices& devices) {
  if (devices.gpus.empty()) return "Rings: none (no GPU).\n";
  if (rings.rings.empty()) return "Rings: none: some GPUs have no path between them.\n";
  char summary[64];
  std::snprintf(summary, sizeof(summary), " (%s, %.1f GB/s)\n", topology::pathTypeName(rings.worstHop),
                rings.bandwidthPerRing);
  std::string out;
  for (size_t i = 0; i < rings.rings.size(); ++i) {
    out += "Ring " + std::to_string(i) + ":";
    for (int gpu : rings.rings[i]) out += " " + devices.labels[static_cast<size_t>(gpu)];
    out += summary;
  }
  return out;
}

const char* const kLegend =
    "Legend:\n"
    "  X   = self\n"
    "  NVL = NVLink, directly or through NVSwitches\n"
    "  NVB = NVLink through another GPU\n"
    "  C2C = the GPU's chip-to-chip link to its CPU\n"
    "  PIX = at most one PCIe switch\n"
    "  PXB = several PCIe switches, without a CPU's host bridge\n"
    "  P2C = C2C, then PCIe\n"
    "  PXN = NVLink to another GPU, then PCIe (GPU to NIC)\n"
    "  PHB = a CPU's PCIe host bridge\n"
    "  SYS = across CPUs (the SMP interconnect between NUMA nodes)\n"
    "  NET = the network\n"
    "  DIS = no path\n";

// The GPUs that NVLink joins, directly, through NVSwitches or through other GPUs, in groups (indices
// into devices.gpus); a GPU without NVLink is a group of its own.
std::vector<std::vector<int>> nvlinkGroups(const Paths& paths, const Devices& devices) {
  std::vector<std::vector<int>> groups;
  std::vector<bool> placed(devices.gpus.size(), false);
  for (size_t g = 0; g < devices.gpus.size(); ++g) {
    if (placed[g]) continue;
    std::vector<int> group;
    for (size_t p = g; p < devices.gpus.size(); ++p) {
      const topology::PathType type = paths.between(devices.gpus[g], devices.gpus[p]).type;
      if (p == g || type == topology::PathType::kNvl || type == topology::PathType::kNvb) {
        placed[p] = true;
        group.push_back(static_cast<int>(p));
      }
    }
    groups.push_back(std::move(group));
  }
  return groups;
}

// Where NVLink joins the GPUs in several groups of more than one: which, and that the source shows
// no NVLink between them (a DGX-2's hwloc file lacks the links between its two baseboards).
std::string nvlinkGroupLines(const Paths& paths, const Devices& devices) {
  const std::vector<std::vector<int>> groups = nvlinkGroups(paths, devices);
  const bool joined = std::any_of(groups.begin(), groups.end(), [](const auto& group) { return group.size() > 1; });
  if (groups.size() < 2 || !joined) return "";
  std::string out = "\nNVLink joins the GPUs in " + std::to_string(groups.size()) + " groups:";
  for (const std::vector<int>& group : groups) {
    out += " {";
    for (size_t i = 0; i < group.size(); ++i) out += (i == 0 ? "" : " ") + devices.labels[group[i]];
    out += "}";
  }
  return out + "; the source shows no NVLink between them, so the paths above, and the rings below, cross PCIe and "
               "CPUs there.\n";
}

// Per GPU, the GPUs it may reach peer to peer (CUDA IPC) under `p2p`: "  GPU0: GPU1 GPU2", or
// "  GPU0: none"; one line when every pair may.
std::string p2pLines(const Paths& paths, const Devices& devices, const topology::P2pPolicy& p2p) {
  std::string out = "\nGPU peer to peer (" + (p2p.setting.empty() ? std::string("NCCL_P2P_LEVEL unset") : p2p.setting) +
                    "; pairs it forbids exchange no GPU buffers):\n";
  std::string lines;
  bool every = true;
  for (size_t g = 0; g < devices.gpus.size(); ++g) {
    std::string line = "  " + devices.labels[g] + ":";
    for (size_t p = 0; p < devices.gpus.size(); ++p) {
      if (p == g) continue;
      if (topology::p2pAllowed(paths, devices.gpus[g], devices.gpus[p], p2p)) {
        line += " " + devices.labels[p];
      } else {
        every = false;
      }
    }
    lines += (line.back() == ':' ? line + " none" : line) + "\n";
  }
  return out + (every ? "  every pair of GPUs\n" : lines);
}

// Whether NVLS could serve the GPUs, and why not: "NVLS: not possible here: GPU0 is sm_80: ...".
std::string nvlsLine(const System& system, bool enabled) {
  const topology::NvlsSupport nvls = topology::nvlsSupport(system, enabled);
  if (nvls.possible) {
    return "\nNVLS: possible here: " + nvls.reason +
           ". Weft's allreduce takes it where a communicator has one rank per GPU and the tuner prefers it.\n";
  }
  return "\nNVLS: not possible here: " + nvls.reason + ".\n";
}

}  // namespace

std::string topoText(const System& system, const Paths& paths, const topology::RingSet& rings,
                     const TopoPolicies& policies, const std::string& nodesSection) {
  const Devices devices = devicesOf(system);
  std::string out = "# " + system.source() + ": " + std::to_string(devices.gpus.size()) + " GPU(s), " +
                    std::to_string(devices.nics.size()) + " NIC(s), " +
                    std::to_string(system.nodesOfType(NodeType::kCpu).size()) + " NUMA node(s)\n";
  const size_t width = 6;
  size_t affinityWidth = std::string("CPU Affinity").size();
  for (int node : devices.all) affinityWidth = std::max(affinityWidth, affinityOf(system, system.node(node).cpuNuma).size());
  affinityWidth += 2;
  std::string header;
  appendCell(&header, "", width);
  for (const std::string& label : devices.labels) appendCell(&header, label, width);
  appendCell(&header, "CPU Affinity", affinityWidth);
  header += "NUMA Affinity\n";
  out += header;
  for (size_t row = 0; row < devices.all.size(); ++row) {
    std::string line;
    appendCell(&line, devices.labels[row], width);
    for (size_t column = 0; column < devices.all.size(); ++column) {
      const std::string cell =
          row == column ? "X" : topology::pathTypeName(paths.between(devices.all[row], devices.all[column]).type);
      appendCell(&line, cell, width);
    }
    const int numa = system.node(devices.all[row]).cpuNuma;
    appendCell(&line, affinityOf(system, numa), affinityWidth);
    line += numa >= 0 ? std::to_string(numa) : "N/A";
    out += line + "\n";
  }
  if (!devices.nics.empty()) {
    out += "\nNICs:\n";
    for (size_t i = 0; i < devices.nics.size(); ++i) {
      const topology::Node& node = system.node(devices.nics[i]);
      out += "  NIC" + std::to_string(i) + ": " + nicName(node);
      if (!busIdOf(node).empty()) out += " (" + busIdOf(node) + ")";
      for (const topology::NetPort& port : node.nic.ports) {
        char speed[64];
        if (port.speedMbps > 0) {
          std::snprintf(speed, sizeof(speed), " %s port %d %.0f Gb/s", port.name.c_str(), port.port,
                        port.speedMbps / 1000);
        } else {
          std::snprintf(speed, sizeof(speed), " %s port %d (speed unknown)", port.name.c_str(), port.port);
        }
        out += speed;
      }
      out += "\n";
    }
  }
  if (!devices.gpus.empty() && !devices.nics.empty()) out += gdrLines(system, paths, devices, policies.gdr);
  if (devices.gpus.size() > 1) out += p2pLines(paths, devices, policies.p2p);
  if (system.nvlinkDescribed()) out += nvlinkGroupLines(paths, devices);
  out += nvlsLine(system, policies.nvlsEnabled);
  if (!system.nvlinkDescribed() && !devices.gpus.empty()) {
    out += "\nNVLink is not described by this source: the paths above are those it does describe "
           "(PCIe, CPUs), and the rings below assume them; GPUs it connects by NVLink would show NVL.\n";
  }
  out += "\n" + ringLines(rings, devices);
  out += "\nCommunicators whose ranks have GPUs order each host's ranks along these rings "
         "(NCCL_DEBUG_SUBSYS=GRAPH shows them); ranks on host memory follow their NUMA nodes.\n";
  out += nodesSection.empty() ? "--nodes N shows the NICs each channel would use and the trees over N such nodes.\n"
                              : nodesSection;
  out += "\n";
  out += kLegend;
  return out;
}

nlohmann::json topoJson(const System& system, const Paths& paths, const topology::RingSet& rings,
                        const TopoPolicies& policies) {
  const Devices devices = devicesOf(system);
  nlohmann::json json;
  json["source"] = system.source();
  json["nvlink_described"] = system.nvlinkDescribed();
  json["cpus"] = nlohmann::json::array();
  for (int cpu : system.nodesOfType(NodeType::kCpu)) {
    const topology::Node& node = system.node(cpu);
    json["cpus"].push_back({{"numa", node.cpu.numaId}, {"affinity", node.cpu.affinity}});
  }
  json["gpus"] = nlohmann::json::array();
  for (int gpu : devices.gpus) {
    const topology::Node& node = system.node(gpu);
    json["gpus"].push_back({{"dev", node.gpu.dev}, {"busid", busIdOf(node)}, {"numa", node.cpuNuma}, {"sm", node.gpu.sm}});
  }
  json["nics"] = nlohmann::json::array();
  for (int nic : devices.nics) {
    const topology::Node& node = system.node(nic);
    nlohmann::json ports = nlohmann::json::array();
    for (const topology::NetPort& port : node.nic.ports) {
      ports.push_back({{"name", port.name}, {"port", port.port}, {"speed_mbps", port.speedMbps}});
    }
    json["nics"].push_back({{"name", nicName(node)}, {"busid", busIdOf(node)}, {"numa", node.cpuNuma}, {"ports", ports}});
  }
  auto matrix = [&](const std::vector<int>& rows, const std::vector<int>& columns, bool bandwidth) {
    nlohmann::json result = nlohmann::json::array();
    for (int row : rows) {
      nlohmann::json line = nlohmann::json::array();
      for (int column : columns) {
        const topology::Path& path = paths.between(row, column);
        if (bandwidth) line.push_back(path.bandwidth);
        else line.push_back(topology::pathTypeName(path.type));
      }
      result.push_back(line);
    }
    return result;
  };
  json["paths"] = {{"gpu_gpu", matrix(devices.gpus, devices.gpus, false)},
                   {"gpu_nic", matrix(devices.gpus, devices.nics, false)},
                   {"gpu_gpu_bandwidth", matrix(devices.gpus, devices.gpus, true)},
                   {"gpu_nic_bandwidth", matrix(devices.gpus, devices.nics, true)}};
  nlohmann::json direct = nlohmann::json::array();
  for (int gpu : devices.gpus) {
    nlohmann::json line = nlohmann::json::array();
    for (int nic : devices.nics) line.push_back(topology::netPath(system, paths, gpu, nic, policies.gdr).gdr);
    direct.push_back(line);
  }
  json["paths"]["gpu_nic_gdr"] = direct;
  nlohmann::json peers = nlohmann::json::array();
  for (int gpu : devices.gpus) {
    nlohmann::json line = nlohmann::json::array();
    for (int other : devices.gpus) {
      line.push_back(other != gpu && topology::p2pAllowed(paths, gpu, other, policies.p2p));
    }
    peers.push_back(line);
  }
  json["paths"]["gpu_gpu_p2p"] = peers;
  json["net_gdr_level"] = policies.gdr.level ? topology::pathTypeName(*policies.gdr.level) : "default";
  json["p2p_level"] = policies.p2p.level ? topology::pathTypeName(*policies.p2p.level) : "default";
  json["channels"] = nlohmann::json::array();
  for (const std::vector<int>& ring : rings.rings) json["channels"].push_back(ring);
  json["ring_bandwidth"] = rings.bandwidthPerRing;
  json["ring_worst_hop"] = topology::pathTypeName(rings.worstHop);
  const topology::NvlsSupport nvls = topology::nvlsSupport(system, policies.nvlsEnabled);
  json["nvls"] = {{"possible", nvls.possible}, {"reason", nvls.reason}};
  return json;
}

}  // namespace weft::tools
