#pragma once
// Page-aligned host memory for a connection's slots (the network transports' staging and
// receive rings).

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "src/base/status.h"

namespace weft::transport {

struct FreeDeleter {
  void operator()(uint8_t* memory) const { free(memory); }
};
/// The page that slot memory is aligned to and touched by: 4 KiB, the smallest page of the hosts
/// Weft runs on.
constexpr size_t kPageBytes = 4096;

/// Page-aligned memory for slots, from allocateSlotMemory.
using SlotMemory = std::unique_ptr<uint8_t[], FreeDeleter>;

/// Allocates `bytes` (rounded up to a page) page-aligned and zeroed, every page touched; `what`
/// names the use in the error.
Status allocateSlotMemory(size_t bytes, const char* what, SlotMemory* memory);

}  // namespace weft::transport
