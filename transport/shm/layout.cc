#include "transport/shm/layout.h"

#include <limits>

namespace weft::transport::shm {

Status RingLayout::compute(size_t slotBytes, int slotCount, RingLayout* layout) {
  if (slotBytes == 0 || slotBytes % kCacheLine != 0) {
    return invalidArgument("shared-memory slot size %zu is not a positive multiple of %zu bytes", slotBytes,
                           kCacheLine);
  }
  if (slotCount <= 0) return invalidArgument("shared-memory slot count %d is not positive", slotCount);
  size_t count = static_cast<size_t>(slotCount);
  size_t sizesOffset = sizeof(RingHeader);
  size_t slotsOffset = sizesOffset + count * sizeof(SlotSize);
  if (slotBytes > (std::numeric_limits<size_t>::max() - slotsOffset) / count) {
    return invalidArgument("shared-memory ring of %d slots of %zu bytes is too large to address", slotCount,
                           slotBytes);
  }
  *layout = RingLayout{slotBytes, slotCount, sizesOffset, slotsOffset, slotsOffset + count * slotBytes};
  return Status::ok();
}

}  // namespace weft::transport::shm
