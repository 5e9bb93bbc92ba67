#include "transport/proxy/staged_ring.h"

#include <cstdlib>
#include <utility>

#if WEFT_CUDA
#include <cuda_runtime_api.h>

#include "transport/cuda_ipc/cuda_call.h"
#endif

namespace weft::transport::proxy {
namespace {

constexpr size_t kAlignment = 4096;

size_t roundUp(size_t value, size_t to) { return (value + to - 1) / to * to; }

size_t slotsOffset(int slotCount) { return kSizesOffset + roundUp(static_cast<size_t>(slotCount) * 8, 128); }

}  // namespace

StagedMemory::~StagedMemory() {
  if (host_ != nullptr && free_ != nullptr) free_(host_);
}

StagedMemory::StagedMemory(StagedMemory&& other) noexcept
    : host_(std::exchange(other.host_, nullptr)),
      device_(std::exchange(other.device_, nullptr)),
      free_(std::exchange(other.free_, nullptr)) {}

StagedMemory& StagedMemory::operator=(StagedMemory&& other) noexcept {
  if (this != &other) {
    if (host_ != nullptr && free_ != nullptr) free_(host_);
    host_ = std::exchange(other.host_, nullptr);
    device_ = std::exchange(other.device_, nullptr);
    free_ = std::exchange(other.free_, nullptr);
  }
  return *this;
}

Status allocateHostStaging(size_t bytes, int /*device*/, StagedMemory* out) {
  void* memory = std::aligned_alloc(kAlignment, roundUp(bytes, kAlignment));
  if (memory == nullptr) return systemError("out of host memory for a proxied connection's ring (%zu bytes)", bytes);
  char* host = static_cast<char*>(memory);
  *out = StagedMemory(host, host, [](char* p) { std::free(p); });
  return Status::ok();
}

#if WEFT_CUDA
Status allocatePinnedStaging(size_t bytes, int cudaDevice, StagedMemory* out) {
  ScopedDevice selected(cudaDevice);
  WEFT_RETURN_IF_ERROR(selected.status());
  void* host = nullptr;
  WEFT_RETURN_IF_ERROR(cudaStatus(cudaHostAlloc(&host, bytes, cudaHostAllocMapped | cudaHostAllocPortable),
                                  "cudaHostAlloc of a proxied connection's ring"));
  void* device = nullptr;
  const Status mapped = cudaStatus(cudaHostGetDevicePointer(&device, host, 0), "cudaHostGetDevicePointer");
  if (!mapped.isOk()) {
    (void)cudaFreeHost(host);
    return mapped;
  }
  *out = StagedMemory(static_cast<char*>(host), static_cast<char*>(device), [](char* p) { (void)cudaFreeHost(p); });
  return Status::ok();
}
#endif

size_t stagedRingBytes(size_t slotBytes, int slotCount) {
  return slotsOffset(slotCount) + slotBytes * static_cast<size_t>(slotCount);
}

DeviceEnd stagedRingAt(char* base, size_t slotBytes, int slotCount) {
  DeviceEnd end;
  end.posted = reinterpret_cast<uint64_t*>(base + kPostedOffset);
  end.released = reinterpret_cast<uint64_t*>(base + kReleasedOffset);
  end.sizes = reinterpret_cast<uint64_t*>(base + kSizesOffset);
  end.slots = base + slotsOffset(slotCount);
  end.slotBytes = slotBytes;
  end.slotCount = slotCount;
  return end;
}

}  // namespace weft::transport::proxy
