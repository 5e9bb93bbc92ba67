#include "transport/cuda_ipc/blob.h"

#include <cstring>

namespace weft::transport::cuda_ipc {
namespace {

constexpr uint32_t kMagic = 0x57435549;  // "WCUI"
constexpr uint32_t kVersion = 3;

struct WireBlob {
  uint32_t magic;
  uint32_t version;
  IpcBlob blob;
};

}  // namespace

std::vector<uint8_t> encodeBlob(const IpcBlob& blob) {
  WireBlob wire{kMagic, kVersion, blob};
  std::vector<uint8_t> bytes(sizeof(wire));
  std::memcpy(bytes.data(), &wire, sizeof(wire));
  return bytes;
}

Status decodeBlob(std::span<const uint8_t> bytes, int peerRank, IpcBlob* blob) {
  WireBlob wire{};
  if (bytes.size() != sizeof(wire)) {
    return invalidArgument("cuda_ipc connection blob from rank %d has %zu bytes, not %zu: is it the same build of Weft?",
                           peerRank, bytes.size(), sizeof(wire));
  }
  std::memcpy(&wire, bytes.data(), sizeof(wire));
  if (wire.magic != kMagic || wire.version != kVersion) {
    return invalidArgument("cuda_ipc connection blob from rank %d has magic %08x version %u: is it the same build of "
                           "Weft?",
                           peerRank, wire.magic, wire.version);
  }
  *blob = wire.blob;
  return Status::ok();
}

}  // namespace weft::transport::cuda_ipc
