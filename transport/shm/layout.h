#pragma once
// The layout of one shared-memory connection's segment, as both processes see it:
//
//   [RingHeader: posted | released | geometry, one 64-byte line each]
//   [SlotSize x slotCount, one 64-byte line each]
//   [slot 0 | slot 1 | ... | slot slotCount-1, slotBytes each, 64-byte aligned]
//
// `posted` is written only by the sender, `released` only by the receiver; each sits alone on its
// cache line so that neither side's writes evict the line the other side polls.

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "src/base/status.h"

namespace weft::transport::shm {

inline constexpr size_t kCacheLine = 64;
inline constexpr uint64_t kRingMagic = 0x31676e69'52746657ull;  // "WftRing1"

// The counters live in memory mapped by two processes: only address-free (lock-free) atomics work.
static_assert(std::atomic<uint64_t>::is_always_lock_free,
              "shared-memory counters need lock-free 64-bit atomics");

struct RingHeader {
  /// Slots posted by the sender since setup. Written by the sender only (release).
  alignas(kCacheLine) std::atomic<uint64_t> posted;
  /// Slots released by the receiver since setup. Written by the receiver only (release).
  alignas(kCacheLine) std::atomic<uint64_t> released;
  /// Geometry, written once by the receiver before the blob is handed out; checked by the sender.
  alignas(kCacheLine) uint64_t magic;
  uint64_t slotBytes;
  uint64_t slotCount;
};
static_assert(sizeof(RingHeader) == 3 * kCacheLine);

/// Payload bytes of one posted slot, published by the sender's release store of `posted`.
struct alignas(kCacheLine) SlotSize {
  uint64_t bytes;
};
static_assert(sizeof(SlotSize) == kCacheLine);

/// Offsets of the parts of a segment for a given slot geometry.
struct RingLayout {
  size_t slotBytes = 0;
  int slotCount = 0;
  size_t sizesOffset = 0;
  size_t slotsOffset = 0;
  size_t totalBytes = 0;

  /// Validates the geometry (slotBytes a positive multiple of 64, slotCount positive, total
  /// representable) and fills *layout. kInvalidArgument otherwise.
  static Status compute(size_t slotBytes, int slotCount, RingLayout* layout);
};

}  // namespace weft::transport::shm
