#include "transport/ib/port_choice.h"

#include <algorithm>

namespace weft::transport::ib {
namespace {

// The path's components below /sys/devices: the root complex ("pci0000:00"), then each PCI device.
std::vector<std::string_view> pciComponents(std::string_view path) {
  constexpr std::string_view kDevices = "/sys/devices/";
  std::vector<std::string_view> components;
  if (!path.starts_with(kDevices)) return components;
  path.remove_prefix(kDevices.size());
  while (!path.empty()) {
    const size_t slash = path.find('/');
    const std::string_view part = path.substr(0, slash);
    // PCI devices are "0000:3b:00.0"; the root complex "pci0000:00"; anything else ends the walk.
    const bool isPci = part.starts_with("pci") || (part.size() == 12 && part[4] == ':' && part[7] == ':');
    if (!isPci) break;
    components.push_back(part);
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return components;
}

}  // namespace

int sharedPciLevels(std::string_view a, std::string_view b) {
  const std::vector<std::string_view> left = pciComponents(a);
  const std::vector<std::string_view> right = pciComponents(b);
  int shared = 0;
  while (shared < static_cast<int>(std::min(left.size(), right.size())) && left[shared] == right[shared]) ++shared;
  return shared;
}

std::string pciBusIdOf(std::string_view path) {
  const std::vector<std::string_view> components = pciComponents(path);
  if (components.size() < 2) return {};  // the first is the root complex
  return std::string(components.back());
}

const IbPort& choosePort(const std::vector<IbPort>& ports, const std::string& gpuPciPath, int numaNode,
                         int channel) {
  std::vector<const IbPort*> nearest;
  if (!gpuPciPath.empty()) {
    int best = 0;
    for (const IbPort& port : ports) best = std::max(best, sharedPciLevels(port.pciPath, gpuPciPath));
    for (const IbPort& port : ports) {
      if (best > 0 && sharedPciLevels(port.pciPath, gpuPciPath) == best) nearest.push_back(&port);
    }
  }
  if (nearest.empty() && numaNode >= 0) {
    for (const IbPort& port : ports) {
      if (port.numaNode == numaNode) nearest.push_back(&port);
    }
  }
  if (nearest.empty()) {
    for (const IbPort& port : ports) nearest.push_back(&port);
  }
  return *nearest[static_cast<size_t>(channel) % nearest.size()];
}

}  // namespace weft::transport::ib
