#include "topology/hwloc_sysfs.h"

#include <net/if.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "topology/system.h"

namespace weft::topology {

namespace {

namespace fs = std::filesystem;

constexpr const char* kLoopbackType = "772";  // ARPHRD_LOOPBACK

/// A decimal integer at the start of `text`; `fallback` when there is none.
long leadingInteger(const std::string& text, long fallback) {
  const char* begin = text.c_str();
  char* end = nullptr;
  const long value = std::strtol(begin, &end, 10);
  return end == begin ? fallback : value;
}

/// Whether an interface's "flags" text ("0x1003") lacks IFF_UP; false when it is unreadable.
bool isDown(const std::string& flags) {
  const char* begin = flags.c_str();
  char* end = nullptr;
  const unsigned long value = std::strtoul(begin, &end, 16);
  return end != begin && (value & IFF_UP) == 0;
}

/// A decimal number at the start of `text`, and the text after it; 0 and `text` when there is none.
double leadingNumber(std::string_view text, std::string_view* rest) {
  const std::string copy(text);
  char* end = nullptr;
  const double value = std::strtod(copy.c_str(), &end);
  const size_t consumed = static_cast<size_t>(end - copy.c_str());
  *rest = text.substr(consumed);
  return consumed == 0 ? 0 : value;
}

/// The entries of `folder`; empty when it cannot be listed. Never throws.
std::vector<fs::path> listFolder(const fs::path& folder) {
  std::vector<fs::path> entries;
  std::error_code error;
  for (fs::directory_iterator it(folder, error), end; !error && it != end; it.increment(error)) {
    entries.push_back(it->path());
  }
  return entries;
}

/// The last component of `path` that is a PCI bus id, canonical; empty when there is none.
std::string lastBusIdOnPath(const fs::path& path) {
  std::string found;
  for (const fs::path& component : path) {
    std::string busId = canonicalBusId(component.string());
    if (!busId.empty()) found = std::move(busId);
  }
  return found;
}

}  // namespace

std::string Sysfs::readLine(const std::string& relativePath) const {
  std::ifstream file(root_ + "/" + relativePath);
  std::string line;
  if (!file || !std::getline(file, line)) return "";
  return line;
}

SysfsPciFunction Sysfs::pciFunction(const std::string& busId) const {
  const std::string device = "bus/pci/devices/" + busId + "/";
  SysfsPciFunction function;
  const std::string classText = readLine(device + "class");
  if (!classText.empty()) function.classCode = static_cast<uint32_t>(std::strtoul(classText.c_str(), nullptr, 16));
  const std::string vendorText = readLine(device + "vendor");
  if (!vendorText.empty()) function.vendor = static_cast<uint16_t>(std::strtoul(vendorText.c_str(), nullptr, 16));
  function.linkSpeedGts = parseLinkSpeedGts(readLine(device + "current_link_speed"));
  function.linkWidth = static_cast<int>(std::max(0L, leadingInteger(readLine(device + "current_link_width"), 0)));
  function.numaNode = static_cast<int>(leadingInteger(readLine(device + "numa_node"), -1));
  std::error_code error;
  const fs::path driver = fs::read_symlink(root_ + "/" + device + "driver", error);
  if (!error) function.driver = driver.filename().string();
  return function;
}

std::vector<SysfsNetInterface> Sysfs::netInterfaces() const {
  std::vector<SysfsNetInterface> interfaces;
  for (const fs::path& entry : listFolder(root_ + "/class/net")) {
    const std::string name = entry.filename().string();
    if (readLine("class/net/" + name + "/type") == kLoopbackType) continue;
    if (isDown(readLine("class/net/" + name + "/flags"))) continue;  // not one the socket transport may use
    SysfsNetInterface netInterface;
    netInterface.name = name;
    std::error_code resolveError;
    const fs::path devicePath = fs::canonical(entry, resolveError);
    if (!resolveError) netInterface.busId = lastBusIdOnPath(devicePath);
    netInterface.numaNode = netInterface.busId.empty()
                             ? static_cast<int>(leadingInteger(readLine("class/net/" + name + "/device/numa_node"), -1))
                             : pciFunction(netInterface.busId).numaNode;
    interfaces.push_back(std::move(netInterface));
  }
  std::sort(interfaces.begin(), interfaces.end(),
            [](const SysfsNetInterface& a, const SysfsNetInterface& b) { return a.name < b.name; });
  return interfaces;
}

double Sysfs::netSpeedMbps(const std::string& name) const {
  // Reading "speed" fails (EINVAL) while the link is down, and virtual devices report -1.
  const long speed = leadingInteger(readLine("class/net/" + name + "/speed"), 0);
  return speed > 0 ? static_cast<double>(speed) : 0;
}

std::vector<SysfsInfinibandPort> Sysfs::infinibandPorts(const std::string& device) const {
  std::vector<SysfsInfinibandPort> ports;
  const std::string portsFolder = "class/infiniband/" + device + "/ports";
  for (const fs::path& entry : listFolder(root_ + "/" + portsFolder)) {
    const std::string name = entry.filename().string();
    const long port = leadingInteger(name, -1);
    if (port <= 0) continue;
    ports.push_back(SysfsInfinibandPort{static_cast<int>(port),
                                        parseInfinibandRateMbps(readLine(portsFolder + "/" + name + "/rate"))});
  }
  std::sort(ports.begin(), ports.end(),
            [](const SysfsInfinibandPort& a, const SysfsInfinibandPort& b) { return a.port < b.port; });
  return ports;
}

double parseLinkSpeedGts(std::string_view text) {
  std::string_view rest;
  const double speed = leadingNumber(text, &rest);
  return speed > 0 && rest.find("GT/s") != std::string_view::npos ? speed : 0;
}

double parseInfinibandRateMbps(std::string_view text) {
  std::string_view rest;
  const double rate = leadingNumber(text, &rest);
  if (!(rate > 0)) return 0;
  const size_t unit = rest.find_first_not_of(' ');
  if (unit == std::string_view::npos) return 0;
  if (rest.substr(unit, 2) == "Gb") return rate * 1000;
  if (rest.substr(unit, 2) == "Mb") return rate;
  return 0;
}

}  // namespace weft::topology
