#include "transport/cuda_ipc/transport.h"

#include "transport/cuda_ipc/blob.h"
#include "transport/cuda_ipc/connection.h"
#include "transport/cuda_ipc/cuda_call.h"

namespace weft::transport::cuda_ipc {
namespace {

// kInvalidArgument unless `blob` describes the connection both ends agreed on (`params`): a sender
// that believed the receiver's slots larger or more numerous would write past them.
Status checkShape(const IpcBlob& blob, const ConnectionParams& params) {
  const uint64_t slots = static_cast<uint64_t>(params.slotCount);
  const uint64_t bytes = kHeaderBytes + (params.slotBytes + params.llSlotBytes) * slots;
  if (blob.slotBytes == params.slotBytes && blob.slotCount == static_cast<uint32_t>(params.slotCount) &&
      blob.llSlotBytes == params.llSlotBytes && blob.bytes == bytes) {
    return Status::ok();
  }
  return invalidArgument("cuda_ipc connection blob from rank %d describes %u slots of %llu bytes and LL slots of %llu "
                         "bytes in %llu bytes; this rank expects %d of %zu and %zu in %llu: is it the same build of "
                         "Weft, with the same NCCL_BUFFSIZE and NCCL_LL_BUFFSIZE?",
                         params.peer.rank, blob.slotCount, static_cast<unsigned long long>(blob.slotBytes),
                         static_cast<unsigned long long>(blob.llSlotBytes), static_cast<unsigned long long>(blob.bytes),
                         params.slotCount, params.slotBytes, params.llSlotBytes,
                         static_cast<unsigned long long>(bytes));
}

class CudaIpcTransport final : public Transport {
 public:
  const char* name() const override { return "cuda_ipc"; }

  bool canConnect(const PeerInfo& self, const PeerInfo& peer) const override {
    return self.sameHost(peer) && self.cudaDevice >= 0 && peer.cudaDevice >= 0;
  }

  Status listen(const ConnectionParams& params, std::unique_ptr<RecvConnection>* connection,
                std::vector<uint8_t>* blob) override {
    if (params.gpuSetupStream == nullptr) return internalError("a cuda_ipc end is made without a setup stream");
    ScopedDevice device(params.self.cudaDevice);
    WEFT_RETURN_IF_ERROR(device.status());
    IpcBlob description;
    std::unique_ptr<IpcRecvConnection> end;
    WEFT_RETURN_IF_ERROR(IpcRecvConnection::create(params.slotBytes, params.slotCount, params.llSlotBytes,
                                                   static_cast<cudaStream_t>(params.gpuSetupStream),
                                                   !params.peer.sameProcess(params.self), &end, &description));
    *blob = encodeBlob(description);
    *connection = std::move(end);
    return Status::ok();
  }

  Status connect(const ConnectionParams& params, std::span<const uint8_t> blob,
                 std::unique_ptr<SendConnection>* connection) override {
    IpcBlob description;
    WEFT_RETURN_IF_ERROR(decodeBlob(blob, params.peer.rank, &description));
    WEFT_RETURN_IF_ERROR(checkShape(description, params));
    ScopedDevice device(params.self.cudaDevice);
    WEFT_RETURN_IF_ERROR(device.status());
    std::unique_ptr<IpcSendConnection> end;
    WEFT_RETURN_IF_ERROR(IpcSendConnection::open(description, params.self.cudaDevice, params.peer.rank, &end));
    *connection = std::move(end);
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Transport> makeCudaIpcTransport() { return std::make_unique<CudaIpcTransport>(); }

}  // namespace weft::transport::cuda_ipc
