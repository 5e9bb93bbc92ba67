#pragma once
// NVIDIA's management library, opened at run time where the driver is installed
// (dlopen("libnvidia-ml.so.1")): the GPUs it sees, their compute capabilities, and the PCI
// function at the far end of each active NVLink. No NVML header or library is needed to build.

#include <string>
#include <vector>

namespace weft::topology {

/// One GPU as NVML reports it.
struct NvmlGpu {
  int index = -1;                        // NVML's index: PCI bus order (CUDA_DEVICE_ORDER=PCI_BUS_ID)
  std::string busId;                     // canonical
  int sm = 0;                            // compute capability x 10; 0 when NVML does not say
  std::vector<std::string> nvlinkPeers;  // per active NVLink, the canonical bus id at its far end
};

/// Reads every GPU NVML sees into `*gpus` (replaced). Blocks while NVML starts (up to a second or
/// two on a machine with many GPUs); any thread may call it. Returns false, with `*gpus` empty,
/// when libnvidia-ml.so.1 is not there or NVML does not start (no driver, no GPU). NVML is shut
/// down again before it returns.
bool readNvmlGpus(std::vector<NvmlGpu>* gpus);

}  // namespace weft::topology
