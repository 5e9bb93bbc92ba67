#pragma once
// CUDA runtime errors as Weft statuses, for the code of the GPU path (CUDA builds only).

#include <cuda_runtime_api.h>

#include "src/base/status.h"

namespace weft {

/// Ok for cudaSuccess; otherwise an unhandled CUDA error (ncclUnhandledCudaError, as NCCL says)
/// naming `what` and CUDA's own words. Clears the runtime's last error so that it does not surface
/// in the application's next check.
inline Status cudaStatus(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return Status::ok();
  (void)cudaGetLastError();
  return makeStatus(StatusCode::kUnhandledCudaError, "%s failed: CUDA error %d (%s): %s", what,
                    static_cast<int>(error), cudaGetErrorName(error), cudaGetErrorString(error));
}

/// Looks up driver call `name` as of driver API `version` into `*entry` (left null where the driver
/// lacks it), through the runtime, so that libnccl.so.2 links no libcuda. Creates no context.
template <class Function>
void findDriverCall(const char* name, int version, Function* entry) {
  void* found = nullptr;
  cudaDriverEntryPointQueryResult result = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(name, &found, version, cudaEnableDefault, &result) == cudaSuccess &&
      result == cudaDriverEntryPointSuccess) {
    *entry = reinterpret_cast<Function>(found);
  }
  (void)cudaGetLastError();
}

/// The calling thread's current CUDA context (cuCtxGetCurrent; null where it has none) into
/// *context. False where the driver cannot say.
bool currentContext(void** context);
/// Makes `context` (from currentContext; null: none) current on the calling thread again.
void restoreContext(void* context);
/// The device of the calling thread's current context (cuCtxGetDevice); -1 where it has none or
/// the driver cannot say.
int currentContextDevice();

/// Makes `device` current on this thread for the guard's lifetime, then restores what was current:
/// the very context (none, on a thread that had none: cudaGetDevice answers 0 there, and making
/// device 0 current would create its context, since CUDA 12, on a GPU the process may never use),
/// or where the driver cannot say which, the previous device.
class ScopedDevice {
 public:
  /// Where the context is known, `device` is selected even if cudaGetDevice names it already: on a
  /// thread with no context it names 0 all the same, and driver calls need one current. (Its
  /// primary context, always: Weft's memory, kernels and helper threads all live there.)
  explicit ScopedDevice(int device)
      : knowsContext_(currentContext(&context_)),
        previous_(knowsContext_ ? -1 : current()),
        status_(select(device, previous_)) {}
  ~ScopedDevice() {
    if (knowsContext_) {
      restoreContext(context_);
      return;
    }
    int now = -1;
    if (previous_ >= 0 && cudaGetDevice(&now) == cudaSuccess && now != previous_) (void)cudaSetDevice(previous_);
  }
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;
  /// Whether the device could be made current.
  const Status& status() const { return status_; }

 private:
  static int current() {
    int device = -1;
    if (cudaGetDevice(&device) != cudaSuccess) {
      (void)cudaGetLastError();
      return -1;
    }
    return device;
  }
  static Status select(int device, int previous) {
    if (device < 0 || device == previous) return Status::ok();
    return cudaStatus(cudaSetDevice(device), "cudaSetDevice");
  }

  void* context_ = nullptr;
  bool knowsContext_ = false;
  int previous_ = -1;
  Status status_;
};

}  // namespace weft
