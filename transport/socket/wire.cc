#include "transport/socket/wire.h"

#include <sys/socket.h>

#include <cstring>

namespace weft::transport::socket {

void encodeBlob(const ListenBlob& blob, std::vector<uint8_t>* bytes) {
  bytes->resize(sizeof(ListenBlob));
  memcpy(bytes->data(), &blob, sizeof(ListenBlob));
}

Status decodeBlob(std::span<const uint8_t> bytes, const ConnectionParams& params, ListenBlob* blob) {
  const int peer = params.peer.rank;
  const char* host = params.peer.hostname;
  if (bytes.size() != sizeof(ListenBlob)) {
    return invalidUsage("the socket connection blob from rank %d on host %s is %zu bytes, expected %zu: the ranks "
                        "run different builds of Weft; run the same build everywhere",
                        peer, host, bytes.size(), sizeof(ListenBlob));
  }
  memcpy(blob, bytes.data(), sizeof(ListenBlob));
  if (blob->magic != kWireMagic || blob->version != kWireVersion) {
    return invalidUsage("the socket connection blob from rank %d on host %s has magic %#llx version %u, expected "
                        "%#llx version %u: the ranks run different builds of Weft; run the same build everywhere",
                        peer, host, static_cast<unsigned long long>(blob->magic), blob->version,
                        static_cast<unsigned long long>(kWireMagic), kWireVersion);
  }
  if (blob->commHash != params.commHash || blob->channel != params.channel || blob->receiverRank != peer) {
    return internalError("the socket connection blob handed over as rank %d's (host %s) for communicator %#llx "
                         "channel %d was written by rank %d for communicator %#llx channel %d: the blobs of two "
                         "connections were mixed up",
                         peer, host, static_cast<unsigned long long>(params.commHash), params.channel,
                         blob->receiverRank, static_cast<unsigned long long>(blob->commHash), blob->channel);
  }
  int family = blob->address.family();
  if ((family != AF_INET && family != AF_INET6) || blob->address.length == 0 ||
      blob->address.length > sizeof(blob->address.storage)) {
    return internalError("the socket connection blob from rank %d on host %s holds no valid address (family %d, "
                         "length %u)",
                         peer, host, family, static_cast<unsigned>(blob->address.length));
  }
  return Status::ok();
}

}  // namespace weft::transport::socket
