#pragma once
// The values of NCCL's topology XML that its reader and writer must agree on.

#include <cstdint>

namespace weft::topology::nccl_xml {

/// <nvlink tclass>: the PCI class of the far end. An NVSwitch (any 0x0680xx but the next one).
constexpr uint32_t kNvSwitchClass = 0x068000;
/// An IBM NPU: the NVLink ends in the GPU's own CPU (POWER9).
constexpr uint32_t kNvLinkCpuClass = 0x068001;
/// The class written for a GPU peer whose class is unknown.
constexpr uint32_t kGpuClass = 0x030200;

/// The target NCCL writes for an NVLink peer whose bus id is hidden (an NVSwitch in a VM); the
/// writer uses it for every peer that has no bus id of its own (the shared NVSwitch, a CPU).
constexpr const char* kHiddenTarget = "fffffff:ff:ff.0";

/// The bandwidth NCCL gives the link between a CPU and a NIC that has no PCI function of its own
/// (LOC_BW): part of the CPU, never the bottleneck. GB/s.
constexpr double kCpuLocalBandwidth = 5000.0;

/// The version attribute of <system> that NCCL writes.
constexpr const char* kSystemVersion = "1";

}  // namespace weft::topology::nccl_xml
