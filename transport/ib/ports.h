#pragma once
// The verbs ports this process may use: every device libibverbs lists, each port that is
// active and that NCCL_IB_HCA allows, with its link layer, MTU, LID and (RoCE) the GID that
// gid.h picks. Found once per process; NCCL_IB_DISABLE=1 or a missing libibverbs leaves none,
// with the reason.

#include <infiniband/verbs.h>

#include <string>
#include <vector>

#include "src/base/status.h"

namespace weft::transport::ib {

struct IbPort {
  std::string device;       // "mlx5_0", "rxe0"
  int port = 1;
  int linkLayer = IBV_LINK_LAYER_INFINIBAND;  // or IBV_LINK_LAYER_ETHERNET (RoCE)
  ibv_mtu mtu = IBV_MTU_1024;                 // the port's active MTU
  uint16_t lid = 0;
  size_t maxMessageBytes = 1u << 31;  // the largest RDMA write the port takes (max_msg_sz)
  int gidIndex = 0;
  ibv_gid gid{};
  int numaNode = -1;        // of the device's PCI function (an rxe device: of its netdev's); -1 unknown
  std::string pciPath;      // that PCI function's sysfs path (/sys/devices/pci0000:00/...); empty: none
  std::string netdev;       // the network interface of the port's first GID ("eth0"); empty: none

  bool isRoce() const { return linkLayer == IBV_LINK_LAYER_ETHERNET; }
  /// "rxe0:1" as NCCL writes it.
  std::string name() const { return device + ":" + std::to_string(port); }
};

struct PortScan {
  std::vector<IbPort> usable;
  /// Every port seen and why it is not used, or why there are none ("NCCL_IB_DISABLE=1",
  /// libibverbs missing, a bad NCCL_IB_HCA): for the messages of NCCL_NET=IB and the INFO line.
  std::string report;
  /// A bad NCCL_IB_HCA or NCCL_IB_ADDR_FAMILY: init fails with it when IB would be used.
  Status configError;
};

/// The scan, done on first use (thread-safe) and kept for the process.
const PortScan& usablePorts();

}  // namespace weft::transport::ib
