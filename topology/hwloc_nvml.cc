#include "topology/hwloc_nvml.h"

#include <dlfcn.h>

#include "topology/system.h"

namespace weft::topology {

namespace {

// The few NVML declarations used here, written as nvml.h declares them (CUDA 12). NVML keeps these
// versioned entry points (_v2, _v3) and their structure layouts stable across drivers.
using NvmlReturn = int;  // nvmlReturn_t
constexpr NvmlReturn kNvmlSuccess = 0;
struct NvmlDeviceHandle;
using NvmlDevice = NvmlDeviceHandle*;   // nvmlDevice_t
using NvmlEnableState = int;            // nvmlEnableState_t
constexpr NvmlEnableState kNvmlFeatureEnabled = 1;
constexpr unsigned kNvmlMaxNvlinks = 18;  // NVML_NVLINK_MAX_LINKS

struct NvmlPciInfo {  // nvmlPciInfo_t
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];  // "00000000:3B:00.0"
};

/// The entry points, resolved from the library.
struct NvmlApi {
  NvmlReturn (*init)() = nullptr;                                       // nvmlInit_v2
  NvmlReturn (*shutdown)() = nullptr;                                   // nvmlShutdown
  NvmlReturn (*deviceCount)(unsigned*) = nullptr;                       // nvmlDeviceGetCount_v2
  NvmlReturn (*deviceByIndex)(unsigned, NvmlDevice*) = nullptr;         // nvmlDeviceGetHandleByIndex_v2
  NvmlReturn (*pciInfo)(NvmlDevice, NvmlPciInfo*) = nullptr;            // nvmlDeviceGetPciInfo_v3
  NvmlReturn (*nvlinkState)(NvmlDevice, unsigned, NvmlEnableState*) = nullptr;  // nvmlDeviceGetNvLinkState
  NvmlReturn (*nvlinkRemotePciInfo)(NvmlDevice, unsigned, NvmlPciInfo*) = nullptr;  // ..._v2
  NvmlReturn (*computeCapability)(NvmlDevice, int*, int*) = nullptr;    // nvmlDeviceGetCudaComputeCapability
};

template <typename Function>
bool resolve(void* library, const char* name, Function* function) {
  *function = reinterpret_cast<Function>(dlsym(library, name));
  return *function != nullptr;
}

/// Opens the library and resolves the API; false when either is missing. The library stays
/// loaded for the life of the process, as every NVML user leaves it: unloading a driver library
/// that others may hold is not safe.
bool openNvml(NvmlApi* api) {
  void* library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) return false;
  return resolve(library, "nvmlInit_v2", &api->init) && resolve(library, "nvmlShutdown", &api->shutdown) &&
         resolve(library, "nvmlDeviceGetCount_v2", &api->deviceCount) &&
         resolve(library, "nvmlDeviceGetHandleByIndex_v2", &api->deviceByIndex) &&
         resolve(library, "nvmlDeviceGetPciInfo_v3", &api->pciInfo) &&
         resolve(library, "nvmlDeviceGetNvLinkState", &api->nvlinkState) &&
         resolve(library, "nvmlDeviceGetNvLinkRemotePciInfo_v2", &api->nvlinkRemotePciInfo) &&
         resolve(library, "nvmlDeviceGetCudaComputeCapability", &api->computeCapability);
}

/// One GPU's facts; false when NVML cannot give its handle or bus id.
bool readGpu(const NvmlApi& api, unsigned index, NvmlGpu* gpu) {
  NvmlDevice device = nullptr;
  NvmlPciInfo pci{};
  if (api.deviceByIndex(index, &device) != kNvmlSuccess || api.pciInfo(device, &pci) != kNvmlSuccess) return false;
  gpu->index = static_cast<int>(index);
  gpu->busId = canonicalBusId(pci.busId);
  int major = 0;
  int minor = 0;
  if (api.computeCapability(device, &major, &minor) == kNvmlSuccess) gpu->sm = major * 10 + minor;
  // Links a GPU does not have answer with an error: go through all of them.
  for (unsigned link = 0; link < kNvmlMaxNvlinks; ++link) {
    NvmlEnableState active = 0;
    if (api.nvlinkState(device, link, &active) != kNvmlSuccess || active != kNvmlFeatureEnabled) continue;
    NvmlPciInfo remote{};
    if (api.nvlinkRemotePciInfo(device, link, &remote) != kNvmlSuccess) continue;
    const std::string peer = canonicalBusId(remote.busId);
    if (!peer.empty()) gpu->nvlinkPeers.push_back(peer);
  }
  return !gpu->busId.empty();
}

}  // namespace

bool readNvmlGpus(std::vector<NvmlGpu>* gpus) {
  gpus->clear();
  NvmlApi api;
  if (!openNvml(&api) || api.init() != kNvmlSuccess) return false;
  unsigned count = 0;
  const bool counted = api.deviceCount(&count) == kNvmlSuccess;
  for (unsigned index = 0; counted && index < count; ++index) {
    NvmlGpu gpu;
    if (readGpu(api, index, &gpu)) gpus->push_back(std::move(gpu));
  }
  api.shutdown();
  if (!counted) gpus->clear();
  return counted;
}

}  // namespace weft::topology
