// The cuda_ipc sender's check of the receiver's blob against the connection both ends agreed on
// (transport/cuda_ipc/transport.cc): slots other than agreed would be written past. connect()
// checks before it touches CUDA, so these run on any machine with a CUDA build.

#if WEFT_CUDA

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "transport/cuda_ipc/blob.h"
#include "transport/cuda_ipc/connection.h"
#include "transport/cuda_ipc/transport.h"

namespace weft::transport::cuda_ipc {
namespace {

ConnectionParams agreedParams() {
  ConnectionParams params;
  params.self.rank = 0;
  params.self.cudaDevice = 0;
  params.peer.rank = 3;
  params.peer.cudaDevice = 0;
  params.slotBytes = 1 << 20;
  params.slotCount = 8;
  params.llSlotBytes = 4096;
  return params;
}

// What a receiver that agreed on `params` describes; pid 0 is no process, so that a blob that
// passes the check goes on to map a handle, and fails there.
IpcBlob blobFor(const ConnectionParams& params) {
  IpcBlob blob;
  blob.pid = 0;
  blob.device = 0;
  blob.slotBytes = params.slotBytes;
  blob.slotCount = static_cast<uint32_t>(params.slotCount);
  blob.llSlotBytes = params.llSlotBytes;
  blob.bytes = kHeaderBytes + (params.slotBytes + params.llSlotBytes) * static_cast<uint64_t>(params.slotCount);
  return blob;
}

Status connectWith(const IpcBlob& blob, std::unique_ptr<SendConnection>* connection) {
  return makeCudaIpcTransport()->connect(agreedParams(), encodeBlob(blob), connection);
}

TEST(CudaIpcBlob, ASenderRefusesSlotsOtherThanAgreed) {
  const std::vector<std::pair<std::string, std::function<void(IpcBlob*)>>> changes = {
      {"larger slots", [](IpcBlob* blob) { blob->slotBytes *= 2; }},
      {"more slots", [](IpcBlob* blob) { blob->slotCount += 1; }},
      {"no LL slots", [](IpcBlob* blob) { blob->llSlotBytes = 0; }},
      {"a larger allocation", [](IpcBlob* blob) { blob->bytes += 64; }},
  };
  for (const auto& [what, change] : changes) {
    SCOPED_TRACE(what);
    IpcBlob blob = blobFor(agreedParams());
    change(&blob);
    std::unique_ptr<SendConnection> connection;
    const Status status = connectWith(blob, &connection);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(status.message().find("from rank 3"), std::string::npos) << status.message();
    EXPECT_NE(status.message().find("NCCL_BUFFSIZE"), std::string::npos) << status.message();
    EXPECT_EQ(connection, nullptr);
  }
}

TEST(CudaIpcBlob, TheAgreedShapePassesTheCheck) {
  std::unique_ptr<SendConnection> connection;
  const Status status = connectWith(blobFor(agreedParams()), &connection);
  // No process 0 exports memory: mapping fails, on a GPU machine or not, but not at the check.
  EXPECT_FALSE(status.isOk());
  EXPECT_EQ(status.message().find("this rank expects"), std::string::npos) << status.message();
}

}  // namespace
}  // namespace weft::transport::cuda_ipc

#endif  // WEFT_CUDA
