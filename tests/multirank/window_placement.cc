#include "tests/multirank/window_placement.h"

#include <cstring>

#include "tests/harness/rank_check.h"

namespace weft::multirank {
namespace {

constexpr size_t kGuardBytes = 64;
constexpr unsigned char kGuardByte = 0xA5;

}  // namespace

WindowPlacement::WindowPlacement(ncclComm_t comm, size_t maxBytes) : comm_(comm), maxBytes_(maxBytes) {
  for (Area& area : areas_) {
    void* memory = nullptr;
    RANK_EXPECT(ncclMemAlloc(&memory, maxBytes + 2 * kGuardBytes) == ncclSuccess) << ncclGetLastError(comm);
    area.memory = static_cast<char*>(memory);
    if (memory == nullptr) return;
    RANK_EXPECT(ncclCommWindowRegister(comm, memory, maxBytes + 2 * kGuardBytes, &area.window,
                                       NCCL_WIN_COLL_SYMMETRIC) == ncclSuccess)
        << ncclGetLastError(comm);
  }
}

WindowPlacement::~WindowPlacement() {
  for (Area& area : areas_) {
    if (area.window != nullptr) {
      RANK_EXPECT(ncclCommWindowDeregister(comm_, area.window) == ncclSuccess) << ncclGetLastError(comm_);
    }
    if (area.memory != nullptr) {
      RANK_EXPECT(ncclMemFree(area.memory) == ncclSuccess);
    }
  }
}

void* WindowPlacement::place(void* host, size_t bytes) {
  RANK_EXPECT(placed_ < 2 && bytes <= maxBytes_) << "a third buffer, or one of " << bytes << " bytes";
  if (placed_ >= 2 || bytes > maxBytes_) return host;
  Area& area = areas_[placed_++];
  if (area.memory == nullptr) return host;
  std::memset(area.memory, kGuardByte, bytes + 2 * kGuardBytes);
  if (bytes > 0) std::memcpy(area.memory + kGuardBytes, host, bytes);
  area.host = host;
  area.bytes = bytes;
  return area.memory + kGuardBytes;
}

void WindowPlacement::finish() {
  for (size_t i = 0; i < placed_; ++i) {
    Area& area = areas_[i];
    if (area.host == nullptr) continue;
    if (area.bytes > 0) std::memcpy(area.host, area.memory + kGuardBytes, area.bytes);
    for (size_t g = 0; g < kGuardBytes; ++g) {
      const bool before = static_cast<unsigned char>(area.memory[g]) == kGuardByte;
      const bool after = static_cast<unsigned char>(area.memory[kGuardBytes + area.bytes + g]) == kGuardByte;
      RANK_EXPECT(before && after) << "a window buffer of " << area.bytes << " bytes was written "
                                   << (before ? "after its end" : "before its start");
      if (!before || !after) break;
    }
    area.host = nullptr;
  }
  placed_ = 0;
}

}  // namespace weft::multirank
