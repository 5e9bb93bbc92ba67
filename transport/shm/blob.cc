#include "transport/shm/blob.h"

#include <cstring>

namespace weft::transport::shm {
namespace {

constexpr uint32_t kBlobMagic = 0x424d4853;  // "SHMB"
constexpr uint32_t kBlobVersion = 2;
constexpr size_t kMaxPath = 4096;

struct BlobHead {
  uint32_t magic;
  uint32_t version;
  uint64_t segmentBytes;
  uint64_t slotBytes;
  uint32_t slotCount;
  uint32_t pathLength;
  uint64_t llSlotBytes;
};

}  // namespace

std::vector<uint8_t> encodeBlob(const ShmBlob& blob) {
  BlobHead head{kBlobMagic,     kBlobVersion,   blob.segmentBytes,
                blob.slotBytes, blob.slotCount, static_cast<uint32_t>(blob.path.size()),
                blob.llSlotBytes};
  std::vector<uint8_t> bytes(sizeof(head) + blob.path.size());
  memcpy(bytes.data(), &head, sizeof(head));
  memcpy(bytes.data() + sizeof(head), blob.path.data(), blob.path.size());
  return bytes;
}

Status decodeBlob(std::span<const uint8_t> bytes, int peerRank, ShmBlob* blob) {
  BlobHead head{};
  if (bytes.size() >= sizeof(head)) memcpy(&head, bytes.data(), sizeof(head));
  if (bytes.size() < sizeof(head) || head.magic != kBlobMagic || head.version != kBlobVersion ||
      head.pathLength == 0 || head.pathLength > kMaxPath || bytes.size() != sizeof(head) + head.pathLength) {
    return invalidArgument(
        "the shared-memory connection blob from rank %d (%zu bytes) is not one this build "
        "writes: all ranks must run the same Weft build",
        peerRank, bytes.size());
  }
  blob->segmentBytes = head.segmentBytes;
  blob->slotBytes = head.slotBytes;
  blob->slotCount = head.slotCount;
  blob->llSlotBytes = head.llSlotBytes;
  blob->path.assign(reinterpret_cast<const char*>(bytes.data() + sizeof(head)), head.pathLength);
  return Status::ok();
}

}  // namespace weft::transport::shm
