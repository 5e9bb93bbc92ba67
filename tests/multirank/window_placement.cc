#include "tests/multirank/window_placement.h"

#include <cstring>

#include "tests/harness/rank_check.h"

namespace weft::multirank {
namespace {

constexpr size_t kGuardBytes = 64;
constexpr unsigned char kGuardByte = 0xA5;

}  // namespace

WindowedMemory::WindowedMemory(ncclComm_t comm, size_t bytes) : comm_(comm) {
  void* memory = nullptr;
  RANK_EXPECT(ncclMemAlloc(&memory, bytes) == ncclSuccess) << ncclGetLastError(comm);
  memory_ = static_cast<char*>(memory);
  if (memory_ == nullptr) return;
  RANK_EXPECT(ncclCommWindowRegister(comm, memory_, bytes, &window_, NCCL_WIN_COLL_SYMMETRIC) == ncclSuccess)
      << ncclGetLastError(comm);
}

WindowedMemory::~WindowedMemory() {
  if (window_ != nullptr) {
    RANK_EXPECT(ncclCommWindowDeregister(comm_, window_) == ncclSuccess) << ncclGetLastError(comm_);
  }
  if (memory_ != nullptr) {
    RANK_EXPECT(ncclMemFree(memory_) == ncclSuccess);
  }
}

WindowPlacement::WindowPlacement(ncclComm_t comm, size_t maxBytes)
    : maxBytes_(maxBytes), areas_{{comm, maxBytes + 2 * kGuardBytes}, {comm, maxBytes + 2 * kGuardBytes}} {}

void* WindowPlacement::place(void* host, size_t bytes) {
  RANK_EXPECT(placed_ < 2 && bytes <= maxBytes_) << "a third buffer, or one of " << bytes << " bytes";
  if (placed_ >= 2 || bytes > maxBytes_) return host;
  Area& area = areas_[placed_++];
  char* memory = area.memory.data();
  if (memory == nullptr) return host;
  std::memset(memory, kGuardByte, bytes + 2 * kGuardBytes);
  if (bytes > 0) std::memcpy(memory + kGuardBytes, host, bytes);
  area.host = host;
  area.bytes = bytes;
  return memory + kGuardBytes;
}

void WindowPlacement::finish() {
  for (size_t i = 0; i < placed_; ++i) {
    Area& area = areas_[i];
    if (area.host == nullptr) continue;
    const char* memory = area.memory.data();
    if (area.bytes > 0) std::memcpy(area.host, memory + kGuardBytes, area.bytes);
    for (size_t g = 0; g < kGuardBytes; ++g) {
      const bool before = static_cast<unsigned char>(memory[g]) == kGuardByte;
      const bool after = static_cast<unsigned char>(memory[kGuardBytes + area.bytes + g]) == kGuardByte;
      RANK_EXPECT(before && after) << "a window buffer of " << area.bytes << " bytes was written "
                                   << (before ? "after its end" : "before its start");
      if (!before || !after) break;
    }
    area.host = nullptr;
  }
  placed_ = 0;
}

}  // namespace weft::multirank
