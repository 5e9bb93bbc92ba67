#include "src/core/pointer_check.h"

namespace weft::core {

Status checkBufferDevice(const char* what, const void* ptr, int bufferDevice, int rank, int commDevice) {
  if (bufferDevice < 0 || commDevice < 0 || bufferDevice == commDevice) return Status::ok();
  return invalidArgument("%s %p is memory of CUDA device %d, but rank %d of this communicator uses device %d "
                         "(NCCL_CHECK_POINTERS=1): allocate it on the communicator's device",
                         what, ptr, bufferDevice, rank, commDevice);
}

}  // namespace weft::core
