#include "src/device/cuda_driver.h"

#include <cuda_runtime_api.h>

namespace weft::device {
namespace {

// Looks up `name` as of driver API `version` into `*entry` (left null where the driver lacks it).
template <class Function>
void find(const char* name, int version, Function* entry) {
  void* found = nullptr;
  cudaDriverEntryPointQueryResult result = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(name, &found, version, cudaEnableDefault, &result) == cudaSuccess &&
      result == cudaDriverEntryPointSuccess) {
    *entry = reinterpret_cast<Function>(found);
  }
  (void)cudaGetLastError();
}

}  // namespace

bool CudaDriver::hasMulticast() const {
  return deviceGet && deviceGetAttribute && getErrorString && memCreate && memRelease && memAddressReserve &&
         memAddressFree && memMap && memUnmap && memSetAccess && memGetAllocationGranularity &&
         memExportToShareableHandle && memImportFromShareableHandle && multicastCreate && multicastGetGranularity &&
         multicastAddDevice && multicastBindMem && multicastUnbind;
}

const CudaDriver& cudaDriver() {
  // Versions are those in which each call took its present form (cuda.h's _vNNNNN names).
  static const CudaDriver driver = [] {
    CudaDriver d;
    find("cuDeviceGet", 2000, &d.deviceGet);
    find("cuDeviceGetAttribute", 2000, &d.deviceGetAttribute);
    find("cuDevicePrimaryCtxGetState", 7000, &d.devicePrimaryCtxGetState);
    find("cuGetErrorString", 6000, &d.getErrorString);
    find("cuMemCreate", 10020, &d.memCreate);
    find("cuMemRelease", 10020, &d.memRelease);
    find("cuMemAddressReserve", 10020, &d.memAddressReserve);
    find("cuMemAddressFree", 10020, &d.memAddressFree);
    find("cuMemMap", 10020, &d.memMap);
    find("cuMemUnmap", 10020, &d.memUnmap);
    find("cuMemSetAccess", 10020, &d.memSetAccess);
    find("cuMemGetAllocationGranularity", 10020, &d.memGetAllocationGranularity);
    find("cuMemExportToShareableHandle", 10020, &d.memExportToShareableHandle);
    find("cuMemImportFromShareableHandle", 10020, &d.memImportFromShareableHandle);
    find("cuMulticastCreate", 12010, &d.multicastCreate);
    find("cuMulticastGetGranularity", 12010, &d.multicastGetGranularity);
    find("cuMulticastAddDevice", 12010, &d.multicastAddDevice);
    find("cuMulticastBindMem", 12010, &d.multicastBindMem);
    find("cuMulticastUnbind", 12010, &d.multicastUnbind);
    return d;
  }();
  return driver;
}

Status driverStatus(CUresult result, const char* what) {
  if (result == CUDA_SUCCESS) return Status::ok();
  const char* words = nullptr;
  const CudaDriver& driver = cudaDriver();
  if (driver.getErrorString == nullptr || driver.getErrorString(result, &words) != CUDA_SUCCESS) words = nullptr;
  return internalError("%s failed: CUDA driver error %d (%s)", what, static_cast<int>(result),
                       words != nullptr ? words : "no description");
}

}  // namespace weft::device
