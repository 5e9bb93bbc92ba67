#include "src/device/block_progress_pool.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <mutex>
#include <vector>

#include "src/device/stream_capture.h"
#include "transport/cuda_ipc/cuda_call.h"

namespace weft::device {
namespace {

std::mutex gMutex;
std::vector<BlockProgressArray> gFree;  // guarded by gMutex

}  // namespace

Status acquireBlockProgress(int blocks, BlockProgressArray* out) {
  {
    std::lock_guard<std::mutex> lock(gMutex);
    auto fits = std::find_if(gFree.begin(), gFree.end(), [blocks](const BlockProgressArray& a) {
      return a.capacity >= blocks;
    });
    if (fits != gFree.end()) {
      *out = *fits;
      gFree.erase(fits);
      std::fill(out->host, out->host + out->capacity, core::GpuBlockProgress{});
      return Status::ok();
    }
  }
  RelaxedCapture relaxed;  // another thread may be capturing a graph: this allocation is not part of it
  void* host = nullptr;
  blocks = std::max(blocks, 1);
  const size_t bytes = static_cast<size_t>(blocks) * sizeof(core::GpuBlockProgress);
  WEFT_RETURN_IF_ERROR(cudaStatus(cudaHostAlloc(&host, bytes, cudaHostAllocMapped | cudaHostAllocPortable),
                                  "cudaHostAlloc of the kernels' progress records"));
  void* device = nullptr;
  const Status mapped = cudaStatus(cudaHostGetDevicePointer(&device, host, 0), "cudaHostGetDevicePointer");
  if (!mapped.isOk()) {
    (void)cudaFreeHost(host);
    return mapped;
  }
  out->host = static_cast<core::GpuBlockProgress*>(host);
  out->device = static_cast<core::GpuBlockProgress*>(device);
  out->capacity = blocks;
  std::fill(out->host, out->host + blocks, core::GpuBlockProgress{});
  return Status::ok();
}

void releaseBlockProgress(const BlockProgressArray& array) {
  if (array.host == nullptr) return;
  std::lock_guard<std::mutex> lock(gMutex);
  gFree.push_back(array);
}

}  // namespace weft::device
