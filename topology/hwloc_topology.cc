#include "topology/hwloc_topology.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

// libhwloc.a, built for executables, reads these three libc variables PC-relatively, which a
// shared library cannot do; the build renames its references to these copies
// (topology/CMakeLists.txt). They live here, in the file every use of hwloc goes through, so that
// the linker has them before it reads the archive. hwloc prints to the first two (in its verbose
// modes) and records the third as the process's name.
extern "C" {
std::FILE* weft_hwloc_stderr = stderr;
std::FILE* weft_hwloc_stdout = stdout;
char* weft_hwloc_program_invocation_name = program_invocation_name;
}

namespace weft::topology {

namespace {

// libhwloc.a is linked into libnccl.so.2, whose symbols are hidden. Distributions ship some of
// hwloc's components as plugins (Debian: hwloc_pci.so, hwloc_opencl.so, hwloc_gl.so,
// hwloc_xml_libxml.so) that hwloc dlopens at its first use; they take hwloc's own functions from the
// process's global symbols, which ours are not, so they fail to load, silently, and the static
// components do the work: the Linux backend reads the PCI tree from sysfs, and the built-in XML
// parser reads files. In a process that also holds a shared libhwloc (an MPI library, say) a
// plugin could load against that other copy; blacklisting the discovery plugins' components keeps
// them out of our topologies all the same. Blacklisting fails (EINVAL) for a component that is not
// registered, which is the usual case and nothing to report.
constexpr const char* kPluginComponents[] = {"pci", "opencl", "gl", "cuda", "nvml", "rsmi", "levelzero"};

}  // namespace

HwlocTopology::~HwlocTopology() {
  if (topology_ != nullptr) hwloc_topology_destroy(topology_);
}

Status HwlocTopology::prepare() {
  if (topology_ != nullptr) return internalError("an HwlocTopology is loaded once");
  if (hwloc_topology_init(&topology_) != 0) {
    topology_ = nullptr;
    return errnoStatus(errno, "hwloc_topology_init");
  }
  for (const char* component : kPluginComponents) {
    (void)hwloc_topology_set_components(topology_, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, component);
  }
  // Every bridge and PCI device: NVSwitches (class 0x0680) are not among hwloc's "important" ones,
  // and objects a distances matrix names must not be filtered out of an XML file.
  if (hwloc_topology_set_io_types_filter(topology_, HWLOC_TYPE_FILTER_KEEP_ALL) != 0) {
    return errnoStatus(errno, "hwloc_topology_set_io_types_filter");
  }
  return Status::ok();
}

Status HwlocTopology::loadThisMachine() {
  WEFT_RETURN_IF_ERROR(prepare());
  if (hwloc_topology_load(topology_) != 0) {
    return systemError("hwloc could not discover this machine: %s (HWLOC_COMPONENTS_VERBOSE=1 shows its steps)",
                       std::strerror(errno));
  }
  loaded_ = true;
  return Status::ok();
}

Status HwlocTopology::loadXml(std::string_view xml, const std::string& name) {
  WEFT_RETURN_IF_ERROR(prepare());
  // hwloc's parser wants the terminating NUL inside the buffer it is given.
  const std::string terminated(xml);
  if (hwloc_topology_set_xmlbuffer(topology_, terminated.c_str(), static_cast<int>(terminated.size() + 1)) != 0) {
    return invalidArgument("hwloc refused the XML of %s: %s", name.c_str(), std::strerror(errno));
  }
  if (hwloc_topology_load(topology_) != 0) {
    return invalidArgument("hwloc could not load %s: %s (HWLOC_XML_VERBOSE=1 shows where its parser stopped)",
                           name.c_str(), std::strerror(errno));
  }
  loaded_ = true;
  return Status::ok();
}

}  // namespace weft::topology
