#include "transport/cuda_ipc/cuda_call.h"

#include <cuda.h>

namespace weft {
namespace {

// The driver's cuCtxGetCurrent and cuCtxSetCurrent, looked up once (null without a driver).
struct ContextCalls {
  CUresult (*get)(CUcontext*) = nullptr;
  CUresult (*set)(CUcontext) = nullptr;
};

template <class Function>
void lookUp(const char* name, Function* entry) {
  void* found = nullptr;
  cudaDriverEntryPointQueryResult result = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(name, &found, 4000, cudaEnableDefault, &result) == cudaSuccess &&
      result == cudaDriverEntryPointSuccess) {
    *entry = reinterpret_cast<Function>(found);
  }
  (void)cudaGetLastError();
}

const ContextCalls& contextCalls() {
  static const ContextCalls calls = [] {
    ContextCalls c;
    lookUp("cuCtxGetCurrent", &c.get);
    lookUp("cuCtxSetCurrent", &c.set);
    return c.get != nullptr && c.set != nullptr ? c : ContextCalls{};
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

}  // namespace weft
