#include "transport/cuda_ipc/cuda_call.h"

#include <cuda.h>

namespace weft {
namespace {

// The driver's cuCtxGetCurrent and cuCtxSetCurrent, looked up once (null without a driver).
struct ContextCalls {
  CUresult (*get)(CUcontext*) = nullptr;
  CUresult (*set)(CUcontext) = nullptr;
  CUresult (*device)(CUdevice*) = nullptr;
};

const ContextCalls& contextCalls() {
  static const ContextCalls calls = [] {
    ContextCalls c;
    findDriverCall("cuCtxGetCurrent", 4000, &c.get);
    findDriverCall("cuCtxSetCurrent", 4000, &c.set);
    if (c.get == nullptr || c.set == nullptr) return ContextCalls{};
    findDriverCall("cuCtxGetDevice", 2000, &c.device);
    return c;
  }();
  return calls;
}

}  // namespace

bool currentContext(void** context) {
  const ContextCalls& calls = contextCalls();
  CUcontext current = nullptr;
  if (calls.get == nullptr || calls.get(&current) != CUDA_SUCCESS) return false;
  *context = current;
  return true;
}

void restoreContext(void* context) {
  const ContextCalls& calls = contextCalls();
  if (calls.set != nullptr) (void)calls.set(static_cast<CUcontext>(context));
}

int currentContextDevice() {
  const ContextCalls& calls = contextCalls();
  CUdevice device = -1;
  if (calls.device == nullptr || calls.device(&device) != CUDA_SUCCESS) return -1;
  return static_cast<int>(device);
}

}  // namespace weft
