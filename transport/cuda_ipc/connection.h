#pragma once
// The two ends of a cuda_ipc connection. The receiving end owns one device allocation: a
// 256-byte header holding the `posted` and `released` counters on separate 128-byte lines, then
// the slots. The sending end maps it (or, in the same process, uses its address).

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "src/base/status.h"
#include "transport/cuda_ipc/blob.h"
#include "transport/transport.h"

namespace weft::transport::cuda_ipc {

inline constexpr size_t kHeaderBytes = 256;
inline constexpr size_t kReleasedOffset = 128;

class IpcRecvConnection final : public RecvConnection {
 public:
  /// Allocates the counters, the slots and (with llSlotBytes) the LL slots on the current device,
  /// zeroes the counters and LL slots on `setupStream` (a non-blocking stream of that device that
  /// runs nothing else) and waits for it, and describes them in *blob: with an IPC handle where
  /// `senderElsewhere` (the sender is another process), else by address alone, so that ranks of
  /// one process connect where the platform refuses CUDA IPC.
  static Status create(size_t slotBytes, int slotCount, size_t llSlotBytes, cudaStream_t setupStream,
                       bool senderElsewhere, std::unique_ptr<IpcRecvConnection>* out, IpcBlob* blob);
  ~IpcRecvConnection() override;

  Status tryPeekSlot(const void** data, size_t* bytes, SlotKind kind) override;
  Status releaseSlot() override;
  size_t slotBytes() const override { return end_.slotBytes; }
  const DeviceEnd* deviceEnd() const override { return &end_; }

 private:
  IpcRecvConnection() = default;
  void* memory_ = nullptr;
  int device_ = -1;
  DeviceEnd end_;
};

class IpcSendConnection final : public SendConnection {
 public:
  /// Maps the receiver's allocation described by `blob`.
  static Status open(const IpcBlob& blob, int selfDevice, int peerRank, std::unique_ptr<IpcSendConnection>* out);
  ~IpcSendConnection() override;

  Status tryAcquireSlot(void** slot, SlotKind kind) override;
  Status postSlot(size_t bytes) override;
  Status tryFlush(bool* done) override;
  size_t slotBytes() const override { return end_.slotBytes; }
  const DeviceEnd* deviceEnd() const override { return &end_; }

 private:
  IpcSendConnection() = default;
  void* mapped_ = nullptr;  // from cudaIpcOpenMemHandle; nullptr when the receiver is this process
  int device_ = -1;
  DeviceEnd end_;
};

}  // namespace weft::transport::cuda_ipc
