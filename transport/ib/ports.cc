#include "transport/ib/ports.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "src/base/knobs.h"
#include "transport/ib/gid.h"
#include "transport/ib/hca_filter.h"
#include "transport/ib/verbs.h"

namespace weft::transport::ib {
namespace {

std::string readSysfs(const std::string& path) {
  std::ifstream file(path);
  std::string line;
  std::getline(file, line);
  return line;
}

// "RoCE v2" -> 2, "IB/RoCE v1" -> 1, anything else 0.
int roceVersionAt(const std::string& device, int port, int index) {
  std::string type = readSysfs("/sys/class/infiniband/" + device + "/ports/" + std::to_string(port) +
                               "/gid_attrs/types/" + std::to_string(index));
  if (type.find("v2") != std::string::npos) return 2;
  if (type.find("v1") != std::string::npos) return 1;
  return 0;
}

// Where the device sits: its PCI function's sysfs path and NUMA node. A virtual device (rxe) has
// no PCI function of its own: its first netdev's is used, or none (placed at the CPU: -1 and "").
void placeDevice(IbPort* port) {
  port->netdev = readSysfs("/sys/class/infiniband/" + port->device + "/ports/" + std::to_string(port->port) +
                           "/gid_attrs/ndevs/0");
  std::string device = "/sys/class/infiniband/" + port->device + "/device";
  std::error_code error;
  if (!std::filesystem::exists(device, error)) {
    device = port->netdev.empty() ? std::string() : "/sys/class/net/" + port->netdev + "/device";
  }
  if (device.empty() || !std::filesystem::exists(device, error)) return;
  port->pciPath = std::filesystem::canonical(device, error).string();
  const std::string node = readSysfs(device + "/numa_node");
  port->numaNode = node.empty() ? -1 : std::atoi(node.c_str());
}

Status gidPreference(GidPreference* preference) {
  preference->index = static_cast<int>(knobs::getInt(knobs::KnobId::kIbGidIndex));
  preference->roceVersion = static_cast<int>(knobs::getInt(knobs::KnobId::kIbRoceVersionNum));
  std::string family = knobs::getString(knobs::KnobId::kIbAddrFamily);
  if (family == "AF_INET") {
    preference->family = AF_INET;
  } else if (family == "AF_INET6") {
    preference->family = AF_INET6;
  } else {
    return invalidArgument("NCCL_IB_ADDR_FAMILY=%s: use AF_INET or AF_INET6", family.c_str());
  }
  return Status::ok();
}

// Fills the port's addressing; false (with *why) when it has no usable GID.
bool describePort(const Verbs& verbs, ibv_context* context, const ibv_port_attr& attr,
                  const GidPreference& preference, IbPort* port, std::string* why) {
  port->linkLayer = attr.link_layer == IBV_LINK_LAYER_ETHERNET ? IBV_LINK_LAYER_ETHERNET : IBV_LINK_LAYER_INFINIBAND;
  port->mtu = attr.active_mtu;
  port->maxMessageBytes = attr.max_msg_sz;
  port->lid = attr.lid;
  std::vector<GidEntry> table;
  for (int index = 0; index < attr.gid_tbl_len; ++index) {
    ibv_gid gid{};
    if (verbs.queryGid(context, static_cast<uint8_t>(port->port), index, &gid) != 0) continue;
    GidEntry entry;
    entry.index = index;
    memcpy(entry.raw, gid.raw, sizeof(entry.raw));
    if (port->isRoce()) entry.roceVersion = roceVersionAt(port->device, port->port, index);
    table.push_back(entry);
    if (!port->isRoce()) break;  // InfiniBand: index 0 (the LID addresses the peer)
  }
  int chosen = chooseGid(table, port->isRoce() ? preference : GidPreference{0, 0, AF_INET6});
  if (chosen < 0) {
    *why = preference.index >= 0 ? "no GID at NCCL_IB_GID_INDEX=" + std::to_string(preference.index)
                                 : std::string("no valid GID (is its netdev up with an address?)");
    return false;
  }
  port->gidIndex = table[chosen].index;
  memcpy(port->gid.raw, table[chosen].raw, sizeof(port->gid.raw));
  return true;
}

PortScan scan() {
  PortScan result;
  if (knobs::getBool(knobs::KnobId::kIbDisable)) {
    result.report = "NCCL_IB_DISABLE=1";
    return result;
  }
  const Verbs* verbs = nullptr;
  Status loaded = loadVerbs(&verbs);
  if (!loaded.isOk()) {
    result.report = loaded.message();
    return result;
  }
  HcaFilter filter;
  GidPreference preference;
  result.configError = parseHcaFilter(knobs::getString(knobs::KnobId::kIbHca), &filter);
  if (result.configError.isOk()) result.configError = gidPreference(&preference);
  if (!result.configError.isOk()) {
    result.report = result.configError.message();
    return result;
  }
  int count = 0;
  ibv_device** devices = verbs->getDeviceList(&count);
  if (devices == nullptr || count == 0) {
    result.report = "libibverbs lists no device (no RDMA driver loaded, or /dev/infiniband unreachable)";
    if (devices != nullptr) verbs->freeDeviceList(devices);
    return result;
  }
  std::string seen;
  for (int d = 0; d < count; ++d) {
    const std::string name = verbs->getDeviceName(devices[d]);
    ibv_context* context = verbs->openDevice(devices[d]);
    if (context == nullptr) {
      seen += " " + name + " (cannot be opened: " + strerror(errno) + ")";
      continue;
    }
    ibv_device_attr device{};
    int ports = verbs->queryDevice(context, &device) == 0 ? device.phys_port_cnt : 0;
    for (int p = 1; p <= ports; ++p) {
      IbPort port;
      port.device = name;
      port.port = p;
      ibv_port_attr attr{};
      std::string why;
      if (verbs->queryPort(context, static_cast<uint8_t>(p), &attr) != 0) {
        why = "cannot be queried";
      } else if (attr.state != IBV_PORT_ACTIVE) {
        why = "not active";
      } else if (!filter.allows(name, p)) {
        why = "excluded by NCCL_IB_HCA";
      } else if (describePort(*verbs, context, attr, preference, &port, &why)) {
        placeDevice(&port);
        result.usable.push_back(port);
        seen += " " + port.name() + " (usable)";
        continue;
      }
      seen += " " + port.name() + " (" + why + ")";
    }
    verbs->closeDevice(context);
  }
  verbs->freeDeviceList(devices);
  result.report = "ports seen:" + seen;
  return result;
}

}  // namespace

const PortScan& usablePorts() {
  static const PortScan result = scan();
  return result;
}

}  // namespace weft::transport::ib
