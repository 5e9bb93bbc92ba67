#include "transport/socket/transport.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "src/base/log.h"
#include "src/base/socket.h"
#include "topology/hwloc_sysfs.h"
#include "transport/acceptor.h"
#include "transport/socket/connection.h"
#include "transport/socket/wire.h"

namespace weft::transport::socket {
namespace {

Status checkParams(const ConnectionParams& params, const char* side) {
  if (params.slotBytes == 0 || params.slotCount <= 0) {
    return invalidArgument("socket transport %s (rank %d, peer rank %d, channel %d): %d slots of %zu bytes; both "
                           "must be positive",
                           side, params.self.rank, params.peer.rank, params.channel, params.slotCount,
                           params.slotBytes);
  }
  return Status::ok();
}

class SocketTransport final : public Transport {
 public:
  const char* name() const override { return "socket"; }

  bool canConnect(const PeerInfo& self, const PeerInfo& peer) const override { return true; }

  std::vector<NetDevice> netDevices() const override {
    std::vector<net::NetInterface> interfaces;
    if (!net::findInterfaces(&interfaces).isOk()) return {};  // listen() reports it
    const std::vector<topology::SysfsNetInterface> sysfs = topology::Sysfs().netInterfaces();
    std::vector<NetDevice> devices;
    for (const net::NetInterface& netInterface : interfaces) {
      auto found = std::find_if(sysfs.begin(), sysfs.end(),
                                [&](const topology::SysfsNetInterface& s) { return s.name == netInterface.name; });
      devices.push_back(NetDevice{netInterface.name, netInterface.name, netInterface.name,
                                  found == sysfs.end() ? std::string() : found->busId});
    }
    return devices;
  }

  Status listen(const ConnectionParams& params, std::unique_ptr<RecvConnection>* connection,
                std::vector<uint8_t>* blob) override {
    WEFT_RETURN_IF_ERROR(checkParams(params, "listen"));
    ListenBlob published;
    published.receiverRank = params.self.rank;
    published.commHash = params.commHash;
    published.channel = params.channel;
    // The channel's interface, as the topology layer chose it; else the channels take the
    // interfaces in turn.
    net::NetInterface on;
    WEFT_RETURN_IF_ERROR(
        listeningInterface(name(), params, params.netDevice >= 0 ? params.netDevice : params.channel, &on));
    std::unique_ptr<Acceptor> acceptor;
    WEFT_RETURN_IF_ERROR(Acceptor::open(name(), params, on, &acceptor, &published.address, &published.nonce));
    WEFT_INFO(log::kNet, "Channel %02d : listening for rank %d (host %s) on %s %s", params.channel,
              params.peer.rank, params.peer.hostname, on.name.c_str(), published.address.toString().c_str());
    std::unique_ptr<SocketRecvConnection> created;
    WEFT_RETURN_IF_ERROR(SocketRecvConnection::create(params, std::move(acceptor), &created));
    encodeBlob(published, blob);
    *connection = std::move(created);
    return Status::ok();
  }

  Status connect(const ConnectionParams& params, std::span<const uint8_t> blob,
                 std::unique_ptr<SendConnection>* connection) override {
    WEFT_RETURN_IF_ERROR(checkParams(params, "connect"));
    ListenBlob published;
    WEFT_RETURN_IF_ERROR(decodeBlob(blob, params, &published));
    net::Socket socket;
    WEFT_RETURN_IF_ERROR(connectToReceiver(name(), params, published.address, published.nonce, {}, &socket));
    WEFT_INFO(log::kNet, "Channel %02d : sending to rank %d (host %s) over socket %s -> %s", params.channel,
              params.peer.rank, params.peer.hostname, socket.localAddress().toString().c_str(),
              published.address.toString().c_str());

    std::unique_ptr<SocketSendConnection> created;
    WEFT_RETURN_IF_ERROR(SocketSendConnection::create(params, std::move(socket), &created));
    *connection = std::move(created);
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Transport> makeSocketTransport() { return std::make_unique<SocketTransport>(); }

}  // namespace weft::transport::socket
