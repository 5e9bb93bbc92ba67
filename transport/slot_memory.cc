#include "transport/slot_memory.h"

#include <algorithm>

namespace weft::transport {

Status allocateSlotMemory(size_t bytes, const char* what, SlotMemory* memory) {
  constexpr size_t kPageBytes = 4096;
  size_t rounded = (std::max<size_t>(bytes, 1) + kPageBytes - 1) / kPageBytes * kPageBytes;
  memory->reset(static_cast<uint8_t*>(aligned_alloc(kPageBytes, rounded)));
  if (!*memory) {
    return systemError("could not allocate %zu bytes for %s: lower NCCL_BUFFSIZE or free memory", rounded, what);
  }
  return Status::ok();
}

}  // namespace weft::transport
