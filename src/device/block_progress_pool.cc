#include "src/device/block_progress_pool.h"

#include <cuda_runtime_api.h>
#include <sys/mman.h>

#include <algorithm>
#include <mutex>
#include <vector>

#include "src/device/stream_capture.h"
#include "transport/cuda_ipc/cuda_call.h"

namespace weft::device {
namespace {

constexpr size_t kArrayBytes = core::kRecordedBlocks * sizeof(core::GpuBlockProgress);

std::mutex gMutex;
std::vector<core::GpuBlockProgress*> gFree;  // guarded by gMutex

// Memory of the pool, or new memory (page-aligned, as cudaHostRegister wants it); null if the
// system has none.
core::GpuBlockProgress* takeMemory() {
  {
    std::lock_guard<std::mutex> lock(gMutex);
    if (!gFree.empty()) {
      core::GpuBlockProgress* memory = gFree.back();
      gFree.pop_back();
      return memory;
    }
  }
  void* memory = mmap(nullptr, kArrayBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return memory != MAP_FAILED ? static_cast<core::GpuBlockProgress*>(memory) : nullptr;
}

void returnMemory(core::GpuBlockProgress* memory) {
  std::lock_guard<std::mutex> lock(gMutex);
  gFree.push_back(memory);
}

}  // namespace

Status acquireBlockProgress(BlockProgressArray* out) {
  core::GpuBlockProgress* host = takeMemory();
  if (host == nullptr) return systemError("mmap of %zu bytes for the kernels' progress records failed", kArrayBytes);
  std::fill(host, host + core::kRecordedBlocks, core::GpuBlockProgress{});
  RelaxedCapture relaxed;  // another thread may be capturing a graph: this registration is not part of it
  Status made = cudaStatus(cudaHostRegister(host, kArrayBytes, cudaHostRegisterMapped | cudaHostRegisterPortable),
                           "cudaHostRegister of the kernels' progress records");
  void* device = nullptr;
  if (made.isOk()) {
    made = cudaStatus(cudaHostGetDevicePointer(&device, host, 0), "cudaHostGetDevicePointer");
    if (!made.isOk()) (void)cudaHostUnregister(host);
  }
  if (!made.isOk()) {
    returnMemory(host);
    return made;
  }
  out->host = host;
  out->device = static_cast<core::GpuBlockProgress*>(device);
  return Status::ok();
}

void releaseBlockProgress(const BlockProgressArray& array) {
  if (array.host == nullptr) return;
  RelaxedCapture relaxed;
  (void)cudaHostUnregister(array.host);
  returnMemory(array.host);
}

}  // namespace weft::device
