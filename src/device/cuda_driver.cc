#include "src/device/cuda_driver.h"

#include <cuda_runtime_api.h>

#include "transport/cuda_ipc/cuda_call.h"

namespace weft::device {

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
    findDriverCall("cuDeviceGet", 2000, &d.deviceGet);
    findDriverCall("cuDeviceGetAttribute", 2000, &d.deviceGetAttribute);
    findDriverCall("cuDevicePrimaryCtxGetState", 7000, &d.devicePrimaryCtxGetState);
    findDriverCall("cuGetErrorString", 6000, &d.getErrorString);
    findDriverCall("cuMemCreate", 10020, &d.memCreate);
    findDriverCall("cuMemRelease", 10020, &d.memRelease);
    findDriverCall("cuMemAddressReserve", 10020, &d.memAddressReserve);
    findDriverCall("cuMemAddressFree", 10020, &d.memAddressFree);
    findDriverCall("cuMemMap", 10020, &d.memMap);
    findDriverCall("cuMemUnmap", 10020, &d.memUnmap);
    findDriverCall("cuMemSetAccess", 10020, &d.memSetAccess);
    findDriverCall("cuMemGetAllocationGranularity", 10020, &d.memGetAllocationGranularity);
    findDriverCall("cuMemExportToShareableHandle", 10020, &d.memExportToShareableHandle);
    findDriverCall("cuMemImportFromShareableHandle", 10020, &d.memImportFromShareableHandle);
    findDriverCall("cuMulticastCreate", 12010, &d.multicastCreate);
    findDriverCall("cuMulticastGetGranularity", 12010, &d.multicastGetGranularity);
    findDriverCall("cuMulticastAddDevice", 12010, &d.multicastAddDevice);
    findDriverCall("cuMulticastBindMem", 12010, &d.multicastBindMem);
    findDriverCall("cuMulticastUnbind", 12010, &d.multicastUnbind);
    return d;
  }();
  return driver;
}

Status driverStatus(CUresult result, const char* what) {
  if (result == CUDA_SUCCESS) return Status::ok();
  const char* words = nullptr;
  const CudaDriver& driver = cudaDriver();
  if (driver.getErrorString == nullptr || driver.getErrorString(result, &words) != CUDA_SUCCESS) words = nullptr;
  return makeStatus(StatusCode::kUnhandledCudaError, "%s failed: CUDA driver error %d (%s)", what,
                    static_cast<int>(result), words != nullptr ? words : "no description");
}

}  // namespace weft::device
