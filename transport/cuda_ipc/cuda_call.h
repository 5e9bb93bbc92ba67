#pragma once
// CUDA runtime errors as Weft statuses, for the code of the GPU path (CUDA builds only).

#include <cuda_runtime_api.h>

#include "src/base/status.h"

namespace weft {

/// Ok for cudaSuccess; otherwise an internal error naming `what` and CUDA's own words. Clears the
/// runtime's sticky last error so that it does not surface in the application's next check.
inline Status cudaStatus(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return Status::ok();
  (void)cudaGetLastError();
  return internalError("%s failed: CUDA error %d (%s): %s", what, static_cast<int>(error), cudaGetErrorName(error),
                       cudaGetErrorString(error));
}

/// Whether the calling thread has a CUDA context current (cuCtxGetCurrent). cudaGetDevice answers 0
/// on a thread that has none, and making device 0 current there creates its context (since CUDA
/// 12): memory on a GPU that the process may never have used. True where the driver cannot say.
bool threadHasContext();

/// Makes `device` current on this thread for the guard's lifetime, then restores the previous one
/// (none, on a thread that had no context: the guard then leaves `device` current).
class ScopedDevice {
 public:
  explicit ScopedDevice(int device) : previous_(current()), status_(select(device, previous_)) {}
  ~ScopedDevice() {
    int now = -1;
    if (previous_ >= 0 && cudaGetDevice(&now) == cudaSuccess && now != previous_) (void)cudaSetDevice(previous_);
  }
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;
  /// Whether the device could be made current.
  const Status& status() const { return status_; }

 private:
  static int current() {
    if (!threadHasContext()) return -1;
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

  int previous_ = -1;
  Status status_;
};

}  // namespace weft
