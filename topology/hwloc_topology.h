#pragma once
// An hwloc topology as Weft loads it: I/O objects (bridges, PCI devices, OS devices) kept, and
// hwloc's dlopen'ed plugins kept out of the discovery (see the .cc for why).

#include <hwloc.h>

#include <string>
#include <string_view>

#include "src/base/status.h"

namespace weft::topology {

/// Owns one loaded hwloc topology. Single use: call one of the load functions once.
class HwlocTopology {
 public:
  HwlocTopology() = default;
  ~HwlocTopology();
  HwlocTopology(const HwlocTopology&) = delete;
  HwlocTopology& operator=(const HwlocTopology&) = delete;

  /// Discovers this machine with hwloc's Linux backend (sysfs, /proc, cpuid). Blocks for the
  /// discovery, tens of milliseconds. Fails with kSystemError saying what hwloc reported.
  Status loadThisMachine();

  /// Loads the hwloc XML document `xml`; `name` stands for it in messages. Fails with
  /// kInvalidArgument saying what hwloc reported.
  Status loadXml(std::string_view xml, const std::string& name);

  /// The loaded topology; null before a successful load.
  hwloc_topology_t get() const { return loaded_ ? topology_ : nullptr; }

 private:
  /// Creates the topology and applies the settings both loads share.
  Status prepare();

  hwloc_topology_t topology_ = nullptr;
  bool loaded_ = false;
};

}  // namespace weft::topology
