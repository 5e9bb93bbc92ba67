#include "transport/ib/wire.h"

#include <cstring>

namespace weft::transport::ib {

void encodeBlob(const IbBlob& blob, std::vector<uint8_t>* bytes) {
  bytes->resize(sizeof(IbBlob));
  memcpy(bytes->data(), &blob, sizeof(IbBlob));
}

Status decodeBlob(std::span<const uint8_t> bytes, const ConnectionParams& params, IbBlob* blob) {
  const int peer = params.peer.rank;
  const char* host = params.peer.hostname;
  if (bytes.size() != sizeof(IbBlob)) {
    return invalidUsage("the ib connection blob from rank %d on host %s is %zu bytes, expected %zu: the ranks run "
                        "different builds of Weft; run the same build everywhere",
                        peer, host, bytes.size(), sizeof(IbBlob));
  }
  memcpy(blob, bytes.data(), sizeof(IbBlob));
  if (blob->magic != kIbWireMagic || blob->version != kIbWireVersion) {
    return invalidUsage("the ib connection blob from rank %d on host %s has magic %#llx version %u, expected %#llx "
                        "version %u: the ranks run different builds of Weft; run the same build everywhere",
                        peer, host, static_cast<unsigned long long>(blob->magic), blob->version,
                        static_cast<unsigned long long>(kIbWireMagic), kIbWireVersion);
  }
  if (blob->commHash != params.commHash || blob->channel != params.channel || blob->receiverRank != peer ||
      blob->slotCount != params.slotCount || blob->slotBytes != params.slotBytes) {
    return internalError("the ib connection blob handed over as rank %d's (host %s) for communicator %#llx channel "
                         "%d (%d slots of %zu bytes) was written by rank %d for communicator %#llx channel %d (%d "
                         "slots of %llu bytes): the blobs of two connections were mixed up",
                         peer, host, static_cast<unsigned long long>(params.commHash), params.channel,
                         params.slotCount, params.slotBytes, blob->receiverRank,
                         static_cast<unsigned long long>(blob->commHash), blob->channel, blob->slotCount,
                         static_cast<unsigned long long>(blob->slotBytes));
  }
  if (blob->queuePairCount < 1 || blob->queuePairCount > kMaxQueuePairs) {
    return internalError("the ib connection blob from rank %d on host %s announces %d queue pairs, not 1 to %d",
                         peer, host, blob->queuePairCount, kMaxQueuePairs);
  }
  return Status::ok();
}

}  // namespace weft::transport::ib
