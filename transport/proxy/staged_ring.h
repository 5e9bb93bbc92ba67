#pragma once
// The ring that a kernel shares with the network proxy (transport/proxy/): the DeviceEnd protocol
// (transport.h) in memory that both the GPU and this process address. One allocation holds the
// `posted` and `released` counters on 128-byte lines of their own, then the slots' byte counts,
// then the slots.

#include <cstddef>
#include <cstdint>

#include "src/base/status.h"
#include "transport/transport.h"

namespace weft::transport::proxy {

/// Memory that the GPU and this process both address: pinned host memory mapped for the GPU, or
/// plain host memory where no GPU takes part. Move-only; freed with the function it was made with.
class StagedMemory {
 public:
  using Free = void (*)(char* host);
  StagedMemory() = default;
  StagedMemory(char* host, char* device, Free free) : host_(host), device_(device), free_(free) {}
  ~StagedMemory();
  StagedMemory(StagedMemory&& other) noexcept;
  StagedMemory& operator=(StagedMemory&& other) noexcept;
  StagedMemory(const StagedMemory&) = delete;
  StagedMemory& operator=(const StagedMemory&) = delete;

  char* host() const { return host_; }
  /// The same bytes as the GPU addresses them.
  char* device() const { return device_; }

 private:
  char* host_ = nullptr;
  char* device_ = nullptr;
  Free free_ = nullptr;
};

/// Allocates `bytes` of staged memory (page-aligned) for a rank of CUDA device `cudaDevice`.
using StagingAllocator = Status (*)(size_t bytes, int cudaDevice, StagedMemory* out);

/// Plain host memory, for ends that no GPU reaches (the proxy's own tests). Ignores `cudaDevice`.
Status allocateHostStaging(size_t bytes, int cudaDevice, StagedMemory* out);
#if WEFT_CUDA
/// Pinned host memory mapped into every CUDA context (cudaHostAlloc, mapped and portable), made
/// with `cudaDevice` current.
Status allocatePinnedStaging(size_t bytes, int cudaDevice, StagedMemory* out);
#endif

inline constexpr size_t kPostedOffset = 0;
inline constexpr size_t kReleasedOffset = 128;
inline constexpr size_t kSizesOffset = 256;

/// Bytes of a ring of `slotCount` slots of `slotBytes`.
size_t stagedRingBytes(size_t slotBytes, int slotCount);

/// The ring in the allocation at `base` (either view of it), as a kernel or the proxy reaches it.
/// `sizes` is set: a sending kernel writes each post's byte count there for the proxy.
DeviceEnd stagedRingAt(char* base, size_t slotBytes, int slotCount);

}  // namespace weft::transport::proxy
