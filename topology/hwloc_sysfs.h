#pragma once
// What sysfs says that hwloc does not keep: a PCI function's full class code, current link and
// driver; the network interfaces, where they hang and their speeds; the ports of InfiniBand/RoCE
// devices and their rates. Reads below a root folder ("/sys" on a live machine), so that tests can
// give it a tree of their own.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace weft::topology {

/// One PCI function; what sysfs does not say (or not readably) stays unknown.
struct SysfsPciFunction {
  uint32_t classCode = 0;   // 0x030200; 0 when unknown
  uint16_t vendor = 0;      // 0x10de; 0 when unknown
  double linkSpeedGts = 0;  // the current link: rate per lane, 0 when unknown
  int linkWidth = 0;        // lanes, 0 when unknown
  std::string driver;       // the bound kernel driver ("amdgpu", "mlx5_core"); empty when none
  int numaNode = -1;
};

/// One network interface of /sys/class/net.
struct SysfsNetInterface {
  std::string name;   // "eth0"
  std::string busId;  // the PCI function on its device path (canonical); empty for virtual ones
  int numaNode = -1;  // of that PCI function, or of the interface's device; -1 when unknown
};

/// One port of an InfiniBand/RoCE device (/sys/class/infiniband/<device>/ports/<port>).
struct SysfsInfinibandPort {
  int port = 1;
  double rateMbps = 0;  // 0 when unknown
};

/// Read-only views of a sysfs tree. Every call reads files anew (the values are live: link speeds
/// change); nothing blocks beyond those reads. Safe to use from any thread.
class Sysfs {
 public:
  explicit Sysfs(std::string root = "/sys") : root_(std::move(root)) {}

  /// The PCI function with canonical bus id `busId` ("0000:3b:00.0").
  SysfsPciFunction pciFunction(const std::string& busId) const;
  /// Every network interface that is up (IFF_UP in its flags, or flags unreadable), but the
  /// loopback ones, in name order. (hwloc lists the interfaces of PCI NICs whatever their state.)
  std::vector<SysfsNetInterface> netInterfaces() const;
  /// The speed of network interface `name` in Mb/s; 0 when unknown (link down, virtual device).
  double netSpeedMbps(const std::string& name) const;
  /// The ports of InfiniBand/RoCE device `device` ("mlx5_0"), in port order; empty when absent.
  std::vector<SysfsInfinibandPort> infinibandPorts(const std::string& device) const;

 private:
  /// The first line of the file at `relativePath` below the root; empty when it cannot be read.
  std::string readLine(const std::string& relativePath) const;

  std::string root_;
};

/// A link rate file's text ("8.0 GT/s PCIe", "2.5 GT/s") in GT/s; 0 for "Unknown" or unreadable.
double parseLinkSpeedGts(std::string_view text);
/// An InfiniBand port's rate file ("100 Gb/sec (4X EDR)", "2.5 Gb/sec (1X SDR)") in Mb/s; 0 when
/// unreadable.
double parseInfinibandRateMbps(std::string_view text);

}  // namespace weft::topology
