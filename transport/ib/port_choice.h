#pragma once
// Which verbs port a rank uses for a channel: the nearest to its GPU in the PCI tree (the ports
// whose device shares the most PCI levels with the GPU: behind the same switch before the same
// root port before the same host bridge), or, without a GPU, those on the NUMA node of its CPU;
// channels spread over the nearest ones. Pure: the paths are sysfs device paths, read elsewhere.

#include <string>
#include <string_view>
#include <vector>

#include "transport/ib/ports.h"

namespace weft::transport::ib {

/// The number of PCI devices two sysfs device paths have in common on their way down from the
/// root complex (/sys/devices/pci0000:00/0000:00:01.0/0000:3b:00.0/...): 0 for different root
/// complexes or an empty path.
int sharedPciLevels(std::string_view a, std::string_view b);

/// The bus id of the last PCI function on a sysfs device path ("0000:3b:00.0" for
/// /sys/devices/pci0000:00/0000:00:01.0/0000:3b:00.0/virtio1); empty when the path has none.
std::string pciBusIdOf(std::string_view path);

/// The port for `channel` when the topology layer names none; `gpuPciPath` is empty for a rank on
/// host memory. `ports` is not empty.
const IbPort& choosePort(const std::vector<IbPort>& ports, const std::string& gpuPciPath, int numaNode,
                         int channel);

}  // namespace weft::transport::ib
