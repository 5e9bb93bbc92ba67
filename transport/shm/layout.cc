#include "transport/shm/layout.h"

#include <limits>

namespace weft::transport::shm {

Status RingLayout::compute(size_t slotBytes, int slotCount, size_t llSlotBytes, RingLayout* layout) {
  if (slotBytes == 0 || slotBytes % kCacheLine != 0) {
    return invalidArgument("shared-memory slot size %zu is not a positive multiple of %zu bytes", slotBytes,
                           kCacheLine);
  }
  if (slotCount <= 0) return invalidArgument("shared-memory slot count %d is not positive", slotCount);
  if (llSlotBytes % kCacheLine != 0 || lowLatencyPayloadBytes(llSlotBytes) > slotBytes) {
    return invalidArgument("shared-memory LL slot size %zu is not a multiple of %zu bytes at most twice the slot size",
                           llSlotBytes, kCacheLine);
  }
  size_t count = static_cast<size_t>(slotCount);
  size_t sizesOffset = sizeof(RingHeader);
  size_t slotsOffset = sizesOffset + count * sizeof(SlotSize);
  const size_t maximum = std::numeric_limits<size_t>::max();
  if (slotBytes + llSlotBytes < slotBytes || slotBytes + llSlotBytes > (maximum - slotsOffset) / count) {
    return invalidArgument("shared-memory ring of %d slots of %zu bytes (LL: %zu) is too large to address",
                           slotCount, slotBytes, llSlotBytes);
  }
  size_t llSlotsOffset = slotsOffset + count * slotBytes;
  *layout = RingLayout{slotBytes,     slotCount,     sizesOffset,
                       slotsOffset,   llSlotBytes,   llSlotsOffset,
                       llSlotsOffset + count * llSlotBytes};
  return Status::ok();
}

}  // namespace weft::transport::shm
