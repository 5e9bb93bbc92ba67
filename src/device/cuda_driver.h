#pragma once
// The CUDA driver calls the GPU path needs beyond the runtime (multicast objects and the virtual
// memory API behind them), found through the runtime's cudaGetDriverEntryPointByVersion, so that
// libnccl.so.2 links no libcuda and still loads where there is no driver. CUDA builds only.

#include <cuda.h>

#include "src/base/status.h"

namespace weft::device {

/// The driver entry points, each null where the driver lacks it (multicast needs a 12.1 driver).
/// Looking them up creates no CUDA context.
struct CudaDriver {
  CUresult (*deviceGet)(CUdevice*, int) = nullptr;
  CUresult (*deviceGetAttribute)(int*, CUdevice_attribute, CUdevice) = nullptr;
  CUresult (*devicePrimaryCtxGetState)(CUdevice, unsigned int*, int*) = nullptr;
  CUresult (*getErrorString)(CUresult, const char**) = nullptr;
  CUresult (*memCreate)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*,
                        unsigned long long) = nullptr;
  CUresult (*memRelease)(CUmemGenericAllocationHandle) = nullptr;
  CUresult (*memAddressReserve)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long) = nullptr;
  CUresult (*memAddressFree)(CUdeviceptr, size_t) = nullptr;
  CUresult (*memMap)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long) = nullptr;
  CUresult (*memUnmap)(CUdeviceptr, size_t) = nullptr;
  CUresult (*memSetAccess)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t) = nullptr;
  CUresult (*memGetAllocationGranularity)(size_t*, const CUmemAllocationProp*,
                                          CUmemAllocationGranularity_flags) = nullptr;
  CUresult (*memExportToShareableHandle)(void*, CUmemGenericAllocationHandle, CUmemAllocationHandleType,
                                         unsigned long long) = nullptr;
  CUresult (*memImportFromShareableHandle)(CUmemGenericAllocationHandle*, void*, CUmemAllocationHandleType) = nullptr;
  CUresult (*multicastCreate)(CUmemGenericAllocationHandle*, const CUmulticastObjectProp*) = nullptr;
  CUresult (*multicastGetGranularity)(size_t*, const CUmulticastObjectProp*, CUmulticastGranularity_flags) = nullptr;
  CUresult (*multicastAddDevice)(CUmemGenericAllocationHandle, CUdevice) = nullptr;
  CUresult (*multicastBindMem)(CUmemGenericAllocationHandle, size_t, CUmemGenericAllocationHandle, size_t, size_t,
                               unsigned long long) = nullptr;
  CUresult (*multicastUnbind)(CUmemGenericAllocationHandle, CUdevice, size_t, size_t) = nullptr;

  /// Whether every entry point that a multicast team needs was found.
  bool hasMulticast() const;
};

/// The process's driver entry points, looked up once (all null without a driver).
const CudaDriver& cudaDriver();

/// Ok for CUDA_SUCCESS; otherwise an internal error naming `what` and the driver's own words.
Status driverStatus(CUresult result, const char* what);

}  // namespace weft::device
