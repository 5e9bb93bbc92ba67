#pragma once
// The memory ncclMemAlloc hands out, as the rest of Weft needs to know it. In a process that uses
// CUDA (the current device's primary context is active), device memory on that device, as NCCL's;
// elsewhere (host-memory programs, builds or machines without CUDA) shared mappings of memfd
// files, so that a local peer can map the same pages (memory windows, src/core/windows.h).

#include <cstddef>

#include "src/base/status.h"

namespace weft::core {

/// Allocates `bytes` (> 0) as ncclMemAlloc does and records it.
Status allocateMemory(size_t bytes, void** out);

/// Frees what allocateMemory returned; kInvalidArgument, changing nothing, for any other pointer.
Status freeMemory(void* ptr);

/// The file behind [address, address + bytes), where the range lies inside one host allocation:
/// a duplicate of its descriptor (the caller closes it) and the range's offset in the file.
/// False for device memory and memory ncclMemAlloc did not allocate.
bool duplicateBackingFile(const void* address, size_t bytes, int* fd, size_t* offset);

}  // namespace weft::core
