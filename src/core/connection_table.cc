#include "src/core/connection_table.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "algorithms/direct_schedule.h"
#include "src/base/log.h"
#include "src/core/channel_nics.h"
#include "transport/registry.h"

namespace weft::core {
namespace {

// Bootstrap tags for connection setup: one per channel and kind (both ends of a pair use the same).
constexpr uint32_t kConnectTagBase = 0x10000;
constexpr uint32_t kDeviceConnectTagBase = 0x18000;
constexpr size_t kTransportNameBytes = 16;
constexpr size_t kMaxBlobBytes = 4096;

uint32_t connectTag(ConnectionKind kind, int channel) {
  return (kind == ConnectionKind::kHost ? kConnectTagBase : kDeviceConnectTagBase) + static_cast<uint32_t>(channel);
}

}  // namespace

std::vector<ConnectionRequest> ringNeighbourRequests(const std::vector<std::vector<int>>& rings, int rank) {
  std::vector<ConnectionRequest> requests;
  for (size_t channel = 0; channel < rings.size(); ++channel) {
    const std::vector<int>& ring = rings[channel];
    const size_t n = ring.size();
    const size_t position = static_cast<size_t>(std::find(ring.begin(), ring.end(), rank) - ring.begin());
    requests.push_back({static_cast<int>(channel), ring[(position + 1) % n], Direction::kSend});
    requests.push_back({static_cast<int>(channel), ring[(position + n - 1) % n], Direction::kRecv});
  }
  return requests;
}

std::vector<ConnectionRequest> directPairRequests(int rank, int nranks, int nChannels) {
  std::vector<ConnectionRequest> requests;
  for (const int first : {0, nChannels}) {  // the collectives' channels, then Send and Recv's
    for (int peer = 0; peer < nranks; ++peer) {
      if (peer == rank && first == 0) continue;  // a collective copies its own block; a Send may go to self
      requests.push_back({first + algorithms::directChannel(rank, peer, nranks, nChannels), peer, Direction::kSend});
      requests.push_back({first + algorithms::directChannel(peer, rank, nranks, nChannels), peer, Direction::kRecv});
    }
  }
  return requests;
}

ConnectionTable::ConnectionTable(const std::vector<PeerInfo>* peers, int rank, Bootstrap* bootstrap,
                                 uint64_t commHash, int nChannels, size_t slotBytes, int slotCount,
                                 size_t llSlotBytes, ConnectionKind kind, void* gpuSetupStream)
    : peers_(peers),
      rank_(rank),
      bootstrap_(bootstrap),
      commHash_(commHash),
      nChannels_(nChannels),
      slotBytes_(slotBytes),
      slotCount_(slotCount),
      llSlotBytes_(llSlotBytes),
      kind_(kind),
      gpuSetupStream_(gpuSetupStream),
      // Ring channels, then as many point-to-point channels.
      sends_(2 * static_cast<size_t>(nChannels) * peers->size()),
      recvs_(2 * static_cast<size_t>(nChannels) * peers->size()) {}

ConnectionTable::~ConnectionTable() = default;

Status ConnectionTable::beginConnect(const std::vector<ConnectionRequest>& requests) {
  // Every receiving end is made before any blob goes out, so that a peer that has this rank's blobs
  // knows it has ended its allocations: ranks that are threads of one process share a GPU's driver,
  // and an allocation while a peer's kernel runs may keep the two ranks' kernels from running at once.
  std::vector<std::pair<int, std::vector<uint8_t>>> messages;  // (request's index, message)
  for (size_t r = 0; r < requests.size(); ++r) {
    const ConnectionRequest& request = requests[r];
    if (request.direction == Direction::kSend) {
      if (send(request.channel, request.peer) != nullptr) continue;
      bool alreadyPending = false;
      for (const ConnectionRequest& pending : pendingSends_) {
        alreadyPending |= pending.channel == request.channel && pending.peer == request.peer;
      }
      if (!alreadyPending) pendingSends_.push_back(request);
      continue;
    }
    if (recv(request.channel, request.peer) != nullptr) continue;
    const PeerInfo& self = (*peers_)[rank_];
    const PeerInfo& peer = (*peers_)[request.peer];
    transport::Transport* transport = nullptr;
    WEFT_RETURN_IF_ERROR(kind_ == ConnectionKind::kHost ? transport::pickTransport(self, peer, &transport)
                                                        : transport::pickDeviceTransport(self, peer, &transport));
    const transport::ConnectionParams params = paramsFor(transport, request.channel, request.peer);
    std::vector<uint8_t> blob;
    std::unique_ptr<transport::RecvConnection> connection;
    WEFT_RETURN_IF_ERROR(transport->listen(params, &connection, &blob)
                             .withContext("setting up a connection from rank " + std::to_string(request.peer)));
    // The sending end follows the receiving end's choice of transport.
    std::vector<uint8_t> message(kTransportNameBytes + blob.size());
    strncpy(reinterpret_cast<char*>(message.data()), transport->name(), kTransportNameBytes - 1);
    memcpy(message.data() + kTransportNameBytes, blob.data(), blob.size());
    messages.emplace_back(static_cast<int>(r), std::move(message));
    WEFT_INFO(log::kInit, "Channel %02d : %d[%d] -> %d[%d] via %s", request.channel, request.peer, request.peer,
              rank_, rank_, transport->name());
    recvs_[index(request.channel, request.peer)] = std::move(connection);
  }
  for (const auto& [which, message] : messages) {
    const ConnectionRequest& request = requests[static_cast<size_t>(which)];
    uint64_t size = message.size();
    uint32_t tag = connectTag(kind_, request.channel);
    WEFT_RETURN_IF_ERROR(bootstrap_->send(request.peer, tag, &size, sizeof(size)));
    WEFT_RETURN_IF_ERROR(bootstrap_->send(request.peer, tag, message.data(), message.size()));
  }
  return Status::ok();
}

Status ConnectionTable::finishConnect() {
  std::vector<ConnectionRequest> pending;
  pending.swap(pendingSends_);
  for (const ConnectionRequest& request : pending) {
    uint32_t tag = connectTag(kind_, request.channel);
    uint64_t size = 0;
    WEFT_RETURN_IF_ERROR(bootstrap_->recv(request.peer, tag, &size, sizeof(size)));
    if (size < kTransportNameBytes || size > kMaxBlobBytes) {
      return internalError("connection setup message of %llu bytes from rank %d is malformed",
                           static_cast<unsigned long long>(size), request.peer);
    }
    std::vector<uint8_t> message(size);
    WEFT_RETURN_IF_ERROR(bootstrap_->recv(request.peer, tag, message.data(), message.size()));
    char name[kTransportNameBytes + 1] = {};
    memcpy(name, message.data(), kTransportNameBytes);
    transport::Transport* transport = transport::findTransport(name);
    if (transport == nullptr) {
      return internalError("rank %d chose transport \"%s\", which this build does not have", request.peer, name);
    }
    const transport::ConnectionParams params = paramsFor(transport, request.channel, request.peer);
    std::unique_ptr<transport::SendConnection> connection;
    std::span<const uint8_t> blob(message.data() + kTransportNameBytes, message.size() - kTransportNameBytes);
    WEFT_RETURN_IF_ERROR(transport->connect(params, blob, &connection)
                             .withContext("connecting to rank " + std::to_string(request.peer)));
    sends_[index(request.channel, request.peer)] = std::move(connection);
  }
  return Status::ok();
}

transport::ConnectionParams ConnectionTable::paramsFor(transport::Transport* transport, int channel, int peer) {
  transport::ConnectionParams params{(*peers_)[rank_], (*peers_)[peer], commHash_, channel, slotBytes_, slotCount_,
                                     llSlotBytes_};
  params.gpuSetupStream = gpuSetupStream_;
  auto known = channelNetDevices_.find(transport);
  if (known == channelNetDevices_.end()) {
    const std::vector<transport::NetDevice> devices = transport->netDevices();
    std::vector<int> chosen;  // empty: no devices
    if (!devices.empty()) chosen = channelNetDevicesHere(devices, (*peers_)[rank_], nChannels_);
    known = channelNetDevices_.emplace(transport, std::move(chosen)).first;
  }
  if (!known->second.empty()) params.netDevice = known->second[channel % nChannels_];
  return params;
}

}  // namespace weft::core
