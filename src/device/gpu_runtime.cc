#include "src/device/gpu_runtime.h"

#if WEFT_CUDA
#include <cuda_runtime_api.h>
#endif

namespace weft::device {

#if WEFT_CUDA

int deviceCount() {
  // The runtime loads the driver on first use; without one it answers an error, once.
  static const int count = [] {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    return devices;
  }();
  return count;
}

bool gpuAvailable() { return deviceCount() > 0; }

int currentDevice() {
  if (!gpuAvailable()) return -1;
  int device = -1;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return device;
}

bool onDevice(const void* ptr) {
  if (ptr == nullptr || !gpuAvailable()) return false;
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, ptr) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged ||
         attributes.type == cudaMemoryTypeHost;
}

#else

int deviceCount() { return 0; }
bool gpuAvailable() { return false; }
int currentDevice() { return -1; }
bool onDevice(const void*) { return false; }

#endif

}  // namespace weft::device
