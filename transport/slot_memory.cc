#include "transport/slot_memory.h"

#include <algorithm>
#include <cstring>

namespace weft::transport {

Status allocateSlotMemory(size_t bytes, const char* what, SlotMemory* memory) {
  size_t rounded = (std::max<size_t>(bytes, 1) + kPageBytes - 1) / kPageBytes * kPageBytes;
  memory->reset(static_cast<uint8_t*>(aligned_alloc(kPageBytes, rounded)));
  if (!*memory) {
    return systemError("could not allocate %zu bytes for %s: lower NCCL_BUFFSIZE or free memory", rounded, what);
  }
  // Touched now, at setup: the first pass through the slots would otherwise pay a page fault
  // per page inside the calls.
  memset(memory->get(), 0, rounded);
  return Status::ok();
}

}  // namespace weft::transport
