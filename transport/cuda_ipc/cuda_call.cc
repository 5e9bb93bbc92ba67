#include "transport/cuda_ipc/cuda_call.h"

#include <cuda.h>

namespace weft {

bool threadHasContext() {
  using GetCurrent = CUresult (*)(CUcontext*);
  static const GetCurrent getCurrent = []() -> GetCurrent {
    void* found = nullptr;
    cudaDriverEntryPointQueryResult result = cudaDriverEntryPointSymbolNotFound;
    const bool ok = cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &found, 4000, cudaEnableDefault, &result) ==
                        cudaSuccess &&
                    result == cudaDriverEntryPointSuccess;
    (void)cudaGetLastError();
    return ok ? reinterpret_cast<GetCurrent>(found) : nullptr;
  }();
  CUcontext context = nullptr;
  return getCurrent == nullptr || getCurrent(&context) != CUDA_SUCCESS || context != nullptr;
}

}  // namespace weft
