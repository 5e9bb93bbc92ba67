#pragma once
// Whether NVLS (NVLink SHARP: NVSwitches that multicast a store to every GPU and reduce a load
// across them, Hopper and later) could serve a machine's GPUs, as the topology shows it, and if
// not, why. NCCL offers its NVLS algorithms only where every GPU of the team is sm_90 or later on
// NVSwitches and the driver reports multicast (CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, which
// also needs the fabric manager); a topology source can show the first two.

#include <string>

#include "topology/system.h"

namespace weft::topology {

struct NvlsSupport {
  bool possible = false;
  /// Why not ("GPU2 is sm_80: NVLS needs Hopper (sm_90) or later"), or what remains to check.
  std::string reason;
};

/// NVLS for the GPUs of `system`: at least two, each of known compute capability sm_90 or later,
/// each with an NVLink to an NVSwitch, and NCCL_NVLS_ENABLE not 0 (`enabled`). This is the
/// machine's view, for `weft topo`; a communicator decides from its own ranks and the driver's
/// word on multicast (src/device/nvls_plan.h).
NvlsSupport nvlsSupport(const System& system, bool enabled);

/// NCCL_NVLS_ENABLE's answer: false for 0; true for 1 and 2 (NCCL's default: where supported).
bool nvlsEnabledByKnob();

}  // namespace weft::topology
