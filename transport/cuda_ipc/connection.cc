#include "transport/cuda_ipc/connection.h"

#include <unistd.h>

#include <cstring>

#include "src/base/peer_info.h"
#include "transport/cuda_ipc/cuda_call.h"

namespace weft::transport::cuda_ipc {
namespace {

DeviceEnd describe(char* base, size_t slotBytes, int slotCount, size_t llSlotBytes) {
  DeviceEnd end;
  end.posted = reinterpret_cast<uint64_t*>(base);
  end.released = reinterpret_cast<uint64_t*>(base + kReleasedOffset);
  end.slots = base + kHeaderBytes;
  end.slotBytes = slotBytes;
  end.slotCount = slotCount;
  if (llSlotBytes > 0) {
    end.llSlots = end.slots + slotBytes * static_cast<size_t>(slotCount);
    end.llSlotBytes = llSlotBytes;
  }
  return end;
}

// Zeroes the counters and the LL slots (whose flags must match no piece yet) before anyone can see
// the allocation, on a non-blocking stream that runs nothing else (the communicator's setup
// stream): cudaMemset would return before the zeros land, and the legacy stream it uses does not
// order the kernels of non-blocking streams, so a peer's first post (or this rank's first kernel)
// could come first and be wiped out. Such a stream also waits for no other rank's kernel (a
// device-wide wait would deadlock with ranks of this process whose kernels wait for this one).
Status zeroCountersAndLowLatencySlots(const DeviceEnd& end, cudaStream_t stream) {
  Status status = cudaStatus(cudaMemsetAsync(end.posted, 0, kHeaderBytes, stream), "cudaMemsetAsync");
  if (status.isOk() && end.llSlots != nullptr) {
    status = cudaStatus(cudaMemsetAsync(end.llSlots, 0, end.llSlotBytes * static_cast<size_t>(end.slotCount), stream),
                        "cudaMemsetAsync");
  }
  if (status.isOk()) status = cudaStatus(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  return status;
}

// `failed` (a CUDA IPC call between processes) with what to do: CUDA IPC is the only transport
// for GPU buffers between processes of one host (README).
Status withCrossProcessAdvice(const Status& failed) {
  if (failed.isOk()) return failed;
  return Status(failed.code(), failed.message() +
                                   "; CUDA IPC between processes needs them in one IPC and PID namespace (containers: "
                                   "--ipc=host --pid=host) on a platform that has it, and NCCL_HOSTID must not make "
                                   "two machines one host; ranks that are threads of one process (ncclCommInitAll) "
                                   "do not need it");
}

Status hostUse() {
  return internalError("a cuda_ipc connection is driven by GPU kernels; the host executor cannot use it");
}

}  // namespace

Status IpcRecvConnection::create(size_t slotBytes, int slotCount, size_t llSlotBytes, cudaStream_t setupStream,
                                 bool senderElsewhere, std::unique_ptr<IpcRecvConnection>* out, IpcBlob* blob) {
  std::unique_ptr<IpcRecvConnection> connection(new IpcRecvConnection());
  WEFT_RETURN_IF_ERROR(cudaStatus(cudaGetDevice(&connection->device_), "cudaGetDevice"));
  const size_t bytes = kHeaderBytes + (slotBytes + llSlotBytes) * static_cast<size_t>(slotCount);
  Status allocated = cudaStatus(cudaMalloc(&connection->memory_, bytes), "cudaMalloc of a cuda_ipc connection");
  if (!allocated.isOk()) {
    connection->memory_ = nullptr;
    return allocated.withContext("reserving " + std::to_string(bytes) +
                                 " bytes of GPU memory for one connection (NCCL_BUFFSIZE and NCCL_LL_BUFFSIZE set "
                                 "the size)");
  }
  connection->end_ = describe(static_cast<char*>(connection->memory_), slotBytes, slotCount, llSlotBytes);
  WEFT_RETURN_IF_ERROR(zeroCountersAndLowLatencySlots(connection->end_, setupStream));
  static_assert(sizeof(cudaIpcMemHandle_t) == kIpcHandleBytes);
  if (senderElsewhere) {
    cudaIpcMemHandle_t handle;
    WEFT_RETURN_IF_ERROR(
        withCrossProcessAdvice(cudaStatus(cudaIpcGetMemHandle(&handle, connection->memory_), "cudaIpcGetMemHandle")));
    std::memcpy(blob->handle, &handle, sizeof(handle));
  }
  blob->pid = static_cast<int32_t>(getpid());
  blob->processNonce = thisProcessNonce();
  blob->device = connection->device_;
  blob->address = reinterpret_cast<uint64_t>(connection->memory_);
  blob->bytes = bytes;
  blob->slotBytes = slotBytes;
  blob->llSlotBytes = llSlotBytes;
  blob->slotCount = static_cast<uint32_t>(slotCount);
  *out = std::move(connection);
  return Status::ok();
}

IpcRecvConnection::~IpcRecvConnection() {
  if (memory_ == nullptr) return;
  ScopedDevice device(device_);
  (void)cudaFree(memory_);
}

Status IpcRecvConnection::tryPeekSlot(const void** /*data*/, size_t* /*bytes*/, SlotKind /*kind*/) {
  return hostUse();
}
Status IpcRecvConnection::releaseSlot() { return hostUse(); }

Status IpcSendConnection::open(const IpcBlob& blob, int selfDevice, int peerRank,
                               std::unique_ptr<IpcSendConnection>* out) {
  std::unique_ptr<IpcSendConnection> connection(new IpcSendConnection());
  connection->device_ = selfDevice;
  char* base = nullptr;
  if (blob.pid == static_cast<int32_t>(getpid()) && blob.processNonce == thisProcessNonce()) {
    // The same process: the address works as it is, once this device may reach the other's memory.
    if (blob.device != selfDevice) {
      cudaError_t error = cudaDeviceEnablePeerAccess(blob.device, 0);
      if (error == cudaErrorPeerAccessAlreadyEnabled) {
        (void)cudaGetLastError();  // handled: not left as the thread's last error
        error = cudaSuccess;
      }
      WEFT_RETURN_IF_ERROR(cudaStatus(error, "cudaDeviceEnablePeerAccess")
                               .withContext("reaching rank " + std::to_string(peerRank) + "'s GPU " +
                                            std::to_string(blob.device) + " from GPU " + std::to_string(selfDevice)));
    }
    base = reinterpret_cast<char*>(blob.address);
  } else {
    cudaIpcMemHandle_t handle;
    std::memcpy(&handle, blob.handle, sizeof(handle));
    void* mapped = nullptr;
    WEFT_RETURN_IF_ERROR(withCrossProcessAdvice(
        cudaStatus(cudaIpcOpenMemHandle(&mapped, handle, cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle")
            .withContext("mapping rank " + std::to_string(peerRank) + "'s connection memory (process " +
                         std::to_string(blob.pid) + ", its CUDA device " + std::to_string(blob.device) + ")")));
    connection->mapped_ = mapped;
    base = static_cast<char*>(mapped);
  }
  connection->end_ = describe(base, blob.slotBytes, static_cast<int>(blob.slotCount), blob.llSlotBytes);
  *out = std::move(connection);
  return Status::ok();
}

IpcSendConnection::~IpcSendConnection() {
  if (mapped_ == nullptr) return;
  ScopedDevice device(device_);
  (void)cudaIpcCloseMemHandle(mapped_);
}

Status IpcSendConnection::tryAcquireSlot(void** /*slot*/, SlotKind /*kind*/) { return hostUse(); }
Status IpcSendConnection::postSlot(size_t bytes) { return hostUse(); }
Status IpcSendConnection::tryFlush(bool* done) {
  *done = true;  // the kernels have moved everything by the time the host asks
  return Status::ok();
}

}  // namespace weft::transport::cuda_ipc
