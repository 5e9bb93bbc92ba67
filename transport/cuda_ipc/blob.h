#pragma once
// What the receiving end of a cuda_ipc connection tells the sender: the device memory holding its
// slots and counters, as a pointer (same process) and as an IPC handle (another process).
// Travels over the bootstrap between processes of one build.

#include <cstdint>
#include <span>
#include <vector>

#include "src/base/status.h"

namespace weft::transport::cuda_ipc {

inline constexpr size_t kIpcHandleBytes = 64;  // sizeof(cudaIpcMemHandle_t)

struct IpcBlob {
  int32_t pid = 0;             // the receiver's process
  uint32_t processNonce = 0;   // with the pid, tells the receiver's process apart (thisProcessNonce)
  int32_t device = -1;         // the receiver's CUDA device
  int32_t padding = 0;         // this and `reserved`: no byte sent is left undefined
  uint64_t address = 0;        // the allocation in the receiver's address space
  uint64_t bytes = 0;          // its size: counters, then slots, then LL slots
  uint64_t slotBytes = 0;
  uint64_t llSlotBytes = 0;    // 0: no LL slots
  uint32_t slotCount = 0;
  uint32_t reserved = 0;
  uint8_t handle[kIpcHandleBytes] = {};  // cudaIpcMemHandle_t of the allocation; zeros for a sender of its process
};

std::vector<uint8_t> encodeBlob(const IpcBlob& blob);

/// kInvalidArgument if `bytes` is not a blob of this build (wrong size, magic or version).
Status decodeBlob(std::span<const uint8_t> bytes, int peerRank, IpcBlob* blob);

}  // namespace weft::transport::cuda_ipc
