#pragma once
// The layout of one shared-memory connection's segment, as both processes see it:
//
//   [RingHeader: posted | released | llReleased | geometry, one 64-byte line each]
//   [SlotSize x slotCount, one 64-byte line each]
//   [slot 0 | slot 1 | ... | slot slotCount-1, slotBytes each, 64-byte aligned]
//   [LL slot 0 | ... | LL slot slotCount-1, llSlotBytes each (none when llSlotBytes is 0)]
//
// `posted` is written only by the sender, the two `released` counts only by the receiver; each
// sits alone on its cache line so that neither side's writes evict the line the other side polls.
//
// An LL slot is an array of 8-byte words, each (flag << 32 | 4 bytes of data), flag being the low
// 32 bits of the slot's place in the LL stream plus one (the segment starts zeroed, so no word
// looks posted before it is). Word 0 holds the payload's byte count, words 1.. the payload. Each
// word is stored and loaded whole, so a reader that sees the flag sees the data beside it: the
// receiver polls the words themselves, and the sender needs no counter and no fence.

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "src/base/status.h"
#include "transport/transport.h"

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
  /// LL slots released by the receiver since setup. Written by the receiver only (release).
  alignas(kCacheLine) std::atomic<uint64_t> llReleased;
  /// Geometry, written once by the receiver before the blob is handed out; checked by the sender.
  alignas(kCacheLine) uint64_t magic;
  uint64_t slotBytes;
  uint64_t slotCount;
  uint64_t llSlotBytes;
};
static_assert(sizeof(RingHeader) == 4 * kCacheLine);

/// An LL word: `data` in the low half, `flag` in the high half.
inline uint64_t llWord(uint32_t flag, uint32_t data) { return static_cast<uint64_t>(flag) << 32 | data; }
inline uint32_t llFlag(uint64_t word) { return static_cast<uint32_t>(word >> 32); }
inline uint32_t llData(uint64_t word) { return static_cast<uint32_t>(word); }
/// The flag of the LL slot at place `index` (0, 1, ...) of the stream.
inline uint32_t llFlagOf(uint64_t index) { return static_cast<uint32_t>(index + 1); }

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
  size_t llSlotBytes = 0;
  size_t llSlotsOffset = 0;
  size_t totalBytes = 0;

  /// Validates the geometry (slotBytes a positive multiple of 64, slotCount positive, llSlotBytes
  /// 0 or a multiple of 64 whose payload fits a Simple slot, total representable) and fills *layout.
  /// kInvalidArgument otherwise.
  static Status compute(size_t slotBytes, int slotCount, size_t llSlotBytes, RingLayout* layout);
};

}  // namespace weft::transport::shm
